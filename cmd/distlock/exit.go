package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// Exit codes. 64, 69 and 75 follow sysexits.h (EX_USAGE, EX_UNAVAILABLE,
// EX_TEMPFAIL); 76 is distlock's own. A command run by distlock run exits
// with its own code, which may collide with these: scripts that need to
// tell them apart should have their command avoid 64-76.
const (
	exitOK      = 0
	exitFailed  = 1   // leaks found, demo check failed, force-release not confirmed, no leader
	exitUsage   = 64  // bad flags or arguments, no backend configured
	exitBackend = 69  // the lock backend is unreachable or failing
	exitBusy    = 75  // another owner holds the lock (the wait expired)
	exitLost    = 76  // the lock was lost while the command ran, or is not held
	exitNoExec  = 126 // run: the command exists but could not be executed
	exitNoCmd   = 127 // run: the command was not found
	exitSignal  = 128 // run: plus the number of the signal that killed the command
)

// exitCodesHelp documents the exit codes, for the help texts.
const exitCodesHelp = `Exit codes:
  0         success (run: the command's own exit code when it ran to completion)
  1         leaks found (leaks), check failed (demo), not confirmed (force-release)
  64        usage error: bad flags or arguments, no backend configured
  69        backend error: Redis unreachable or failing
  75        lock busy: another owner holds the lock (the wait expired)
  76        lock lost while the command ran (run), or not held (extend, release)
  126, 127  run: the command could not be executed, or was not found
  128+N     run: the command was killed by signal N (sent from outside distlock)
`

// cliError is an error with its exit code and a message that says what to
// do next.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &cliError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// fail prints err, prefixed with the command, and returns its exit code.
func (a *app) fail(cmd string, err error) int {
	prefix := "distlock: "
	if cmd != "" {
		prefix = "distlock " + cmd + ": "
	}
	fmt.Fprintln(a.stderr, prefix+strings.TrimPrefix(err.Error(), "distlock: "))
	return exitCode(err)
}

// exitCode maps an error to distlock's exit code.
func exitCode(err error) int {
	var ce *cliError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, distlock.ErrInvalidArgument):
		return exitUsage
	case errors.Is(err, distlock.ErrLocked):
		return exitBusy
	case errors.Is(err, distlock.ErrLeaseLost), errors.Is(err, distlock.ErrNotHeld):
		return exitLost
	case errors.Is(err, distlock.ErrBackend):
		return exitBackend
	}
	return exitFailed
}

// explain turns an error of the distlock library into a message that says
// what happened and what to do next, keeping its exit code. where names the
// backend.
func explain(err error, name, where string) error {
	var (
		locked *distlock.LockedError
		wait   *distlock.WaitError
		be     *distlock.BackendError
		arg    *distlock.ArgumentError
	)
	switch {
	case errors.As(err, &arg):
		return usageErr("invalid %s: %s", arg.Arg, arg.Reason)
	case errors.As(err, &locked):
		msg := fmt.Sprintf("%q is held by another owner (its lease ends in %s)", name, fmtTTL(locked.TTL))
		if locked.TTL < 0 {
			msg = fmt.Sprintf("%q is held and never expires: a leaked lock (see distlock leaks)", name)
		}
		if errors.As(err, &wait) {
			msg += fmt.Sprintf("; gave up after waiting %s.\nWait longer with --wait, or see who holds it: distlock status %s",
				wait.Waited.Round(time.Millisecond), shellQuote(name))
		} else {
			msg += fmt.Sprintf(".\nWait for it with --wait 30s, or see who holds it: distlock status %s", shellQuote(name))
		}
		return &cliError{code: exitBusy, msg: msg}
	case errors.As(err, &be):
		msg := fmt.Sprintf("the lock backend (%s) failed during %s: %v", where, be.Op, be.Err)
		if errors.As(err, &wait) {
			msg = fmt.Sprintf("gave up after waiting %s: %s", wait.Waited.Round(time.Millisecond), msg)
		}
		return &cliError{code: exitBackend, msg: msg + ".\nCheck that Redis is up and reachable, then retry."}
	case errors.Is(err, distlock.ErrLeaseLost), errors.Is(err, distlock.ErrNotHeld):
		return &cliError{code: exitLost, msg: fmt.Sprintf("%q is not held by that owner: it expired, was released, "+
			"or another owner holds it now.\nSee who holds it: distlock status %s", name, shellQuote(name))}
	}
	return err
}

// fmtTTL renders a lock's time left: rounded, and "never" for no expiry.
func fmtTTL(d time.Duration) string {
	switch {
	case d < 0:
		return "never"
	case d >= time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
