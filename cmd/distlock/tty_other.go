//go:build unix && !(linux || darwin || freebsd)

package main

// foreground is unused where the command is not given the terminal.
type foreground struct{ fd int }

// foregroundTerminal returns nil: on this system the command stays in a
// background process group of the terminal.
func foregroundTerminal() *foreground { return nil }

func (f *foreground) handedOver() {}

func (f *foreground) restore() {}
