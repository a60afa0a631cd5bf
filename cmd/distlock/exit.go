package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/remote"
)

// Exit codes. 64, 65, 69 and 75 follow sysexits.h (EX_USAGE, EX_DATAERR,
// EX_UNAVAILABLE, EX_TEMPFAIL); 76 is distlock's own. A command run by
// distlock run exits with its own code, which may collide with these:
// scripts that need to tell them apart should have their command avoid
// 64-76.
const (
	exitOK      = 0
	exitFailed  = 1   // leaks found, demo check failed, force-release not confirmed, no leader
	exitUsage   = 64  // bad flags or arguments, no backend configured, a refused token, no schema
	exitForeign = 65  // a key distlock did not write is at the lock's place
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
  1         leaks found (leaks), check failed (demo), not confirmed
            (force-release), nobody leads (leader)
  64        usage error: bad flags or arguments, no backend configured, a token
            the distlock server refuses, a PostgreSQL schema never migrated
  65        a key distlock did not write is at the lock's place (see leaks,
            then force-release it): no retry or wait mends it
  69        backend error: the lock backend is unreachable or failing
  75        lock busy: another owner holds the lock (the wait expired)
  76        lock lost while the command ran (run), or not held (extend, release,
            force-release --owner)
  126, 127  run: the command could not be executed, or was not found
  128+N     run: the command was killed by signal N (sent from outside
            distlock), or signal N ended the wait for the lock
`

// foreignKeyError is an engine's error for a key at a lock's place that
// distlock did not write (engine/redis.ForeignKeyError), told by its method
// so that the light build, which links no Redis, tells it too.
type foreignKeyError interface {
	error
	// ForeignKey returns the key.
	ForeignKey() string
}

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
	case errors.As(err, new(foreignKeyError)):
		return exitForeign
	case errors.Is(err, distlock.ErrInvalidArgument), refusedSetup(err):
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
		nh     *distlock.NotHolderError
		fk     foreignKeyError
	)
	switch {
	case errors.As(err, &arg):
		return usageErr("invalid %s: %s", arg.Arg, arg.Reason)
	case errors.Is(err, remote.ErrUnauthorized), errors.Is(err, remote.ErrForbidden):
		// No retry mends a token: the wait, if any, ended at once.
		var re *remote.Error
		errors.As(err, &re)
		return usageErr("the %s refused the token during %s (%s): %s.\n"+
			"Set %s to a token of the server whose role may do this (write to take locks, admin to force-release).",
			where, re.Op, re.Code, re.Message, envToken)
	case notMigrated(err):
		return usageErr("the lock backend (%s) has no distlock tables: run 'distlock postgres init' first (%v)", where, err)
	case errors.As(err, &locked):
		msg := fmt.Sprintf("%q is held by another owner (its lease ends in %s)", name, fmtTTL(locked.TTL))
		leaked := false
		switch {
		case locked.Kind != 0 || locked.Queued:
			// A semaphore short of free permits, a side of a
			// reader-writer lock, a lock kept for the waiters queued
			// first: not "held by another owner".
			msg = locked.State()
		case locked.TTL < 0:
			msg, leaked = fmt.Sprintf("%q is held and never expires: a leaked lock (see distlock leaks)", name), true
		}
		if errors.As(err, &wait) {
			msg += fmt.Sprintf("; gave up after waiting %s", wait.Waited.Round(time.Millisecond))
		}
		switch {
		case leaked:
			msg += fmt.Sprintf(".\nNo wait ends this: once its holder is known dead, free it: distlock force-release %s", shellQuote(name))
		case wait != nil:
			msg += fmt.Sprintf(".\nWait longer with --wait, or see who holds it: distlock status %s", shellQuote(name))
		default:
			msg += fmt.Sprintf(".\nWait for it with --wait 30s, or see who holds it: distlock status %s", shellQuote(name))
		}
		return &cliError{code: exitBusy, msg: msg}
	case errors.As(err, &fk):
		return &cliError{code: exitForeign, msg: foreignMsg(fk, name, where)}
	case errors.As(err, &be):
		msg := fmt.Sprintf("the lock backend (%s) failed during %s: %v", where, be.Op, be.Err)
		switch {
		case errors.As(err, &wait):
			msg = fmt.Sprintf("gave up after waiting %s: %s", wait.Waited.Round(time.Millisecond), msg)
		case be.Failing > 0:
			msg = fmt.Sprintf("gave up after the backend failed for %s: %s", be.Failing.Round(time.Millisecond), msg)
		}
		return &cliError{code: exitBackend, msg: msg + ".\nCheck that it is up and reachable, then retry."}
	case errors.As(err, &nh):
		return &cliError{code: exitLost, msg: fmt.Sprintf("%q holds nothing of %q: nothing was released.\n"+
			"See who holds it: distlock status %s", nh.Owner, name, shellQuote(name))}
	case errors.Is(err, distlock.ErrLeaseLost), errors.Is(err, distlock.ErrNotHeld):
		return &cliError{code: exitLost, msg: fmt.Sprintf("%q is not held by that owner: it expired, was released, "+
			"or another owner holds it now.\nSee who holds it: distlock status %s", name, shellQuote(name))}
	}
	return err
}

// foreignMsg explains fk, a key distlock did not write at the place of the
// lock name: no retry or wait mends it, and what does.
func foreignMsg(fk foreignKeyError, name, where string) string {
	return fmt.Sprintf("the lock backend (%s) holds a key distlock did not write at the place of %q (%s): "+
		"%q can be neither taken nor read, and no retry or wait mends that.\n"+
		"See it with distlock leaks; once whatever wrote it is known to be done with it, delete it: distlock force-release %s",
		where, name, fk.ForeignKey(), name, shellQuote(name))
}

// refusedSetup reports an error that says the backend is set up wrong for
// this caller (a token the server refuses, a PostgreSQL schema never
// migrated): a usage error, which no retry mends, not a failing backend.
func refusedSetup(err error) bool {
	return errors.Is(err, remote.ErrUnauthorized) || errors.Is(err, remote.ErrForbidden) || notMigrated(err)
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
