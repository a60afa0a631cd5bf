//go:build !unix

package main

import (
	"errors"
	"os"
)

// forwardedSignals are the signals distlock run passes on.
func forwardedSignals() []os.Signal { return []os.Signal{os.Interrupt} }

// child is not available on this system.
type child struct {
	guard  *guard
	teller *deadlineTeller
}

// startChild fails: without process groups distlock cannot stop the
// command's descendants when the lock is lost.
func startChild(argv []string, env []string) (*child, error) {
	return nil, errors.New("distlock run needs a Unix system: it stops the command's whole process group when the lock is lost")
}

func (c *child) wait() int                 { return exitFailed }
func (c *child) signal(os.Signal)          {}
func (c *child) relayed() <-chan os.Signal { return nil }
func (c *child) stopRelay()                {}
func (c *child) terminate()                {}
func (c *child) kill()                     {}
func (c *child) groupAlive() bool          { return false }
func (c *child) restoreTerminal()          {}
func signalNumber(os.Signal) int           { return 2 }
func startErrorCode(error) int             { return exitNoExec }
