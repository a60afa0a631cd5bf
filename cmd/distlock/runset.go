package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// namesValue is a repeatable flag of lock names (--also).
type namesValue struct{ names *[]string }

func (v namesValue) String() string {
	if v.names == nil {
		return ""
	}
	return strings.Join(*v.names, ",")
}

func (v namesValue) Set(s string) error {
	*v.names = append(*v.names, s)
	return nil
}

// namesFlag defines a repeatable flag of lock names.
func namesFlag(fs *flag.FlagSet, name string) *[]string {
	var names []string
	fs.Var(namesValue{&names}, name, "")
	return &names
}

// refusedName is the lock that err says refused or failed a call (of a
// set: the member it was about), else name.
func refusedName(err error, name string) string {
	var le *distlock.LockedError
	var we *distlock.WaitError
	var be *distlock.BackendError
	switch {
	case errors.As(err, &we):
		return we.Name
	case errors.As(err, &le):
		return le.Name
	case errors.As(err, &be) && be.Name != "":
		return be.Name
	}
	return name
}

// runSpec is a distlock run over several locks (--also).
type runSpec struct {
	names     []string // NAME, then each --also, in the order given
	argv      []string
	redisURL  string
	ttl, wait time.Duration
	grace     time.Duration
	notes     *notes // -v, --verbose
	sigs      <-chan os.Signal
}

// runSet is distlock run with --also: it takes every name at once, all or
// nothing (Client.AcquireAll), runs the command with each name's token in
// its environment (setEnv) and stops it when any of them is lost.
func (a *app) runSet(r runSpec, opts ...distlock.Option) int {
	const cmd = "run"
	label := strings.Join(r.names, ", ")
	b, set, code := acquireHeld(a, cmd, r.names[0], r.redisURL, r.wait, r.sigs,
		func(ctx context.Context, c *distlock.Client) (*distlock.LeaseSet, error) {
			if r.wait <= 0 {
				return c.TryAcquireAll(ctx, r.names, opts...)
			}
			wctx, cancel := context.WithTimeout(ctx, r.wait)
			defer cancel()
			return c.AcquireAll(wctx, r.names, opts...)
		})
	if set == nil {
		return code
	}
	defer b.close(releaseLeases)
	if err := set.Err(); err != nil {
		return a.fail(cmd, &cliError{code: exitLost, msg: fmt.Sprintf("lost a lock of %s before the command started: %v",
			label, strings.TrimPrefix(err.Error(), "distlock: "))})
	}
	ch, err := a.startGuarded(cmd, r.argv, setEnv(os.Environ(), r.names, set), r.grace, set)
	if err != nil {
		_ = set.Release(context.Background())
		fmt.Fprintf(a.stderr, "distlock run: cannot run %s: %v\n", r.argv[0], err)
		return startErrorCode(err)
	}
	r.notes.say("distlock run: acquired %s (fences %v, ttl %v); running %s\n",
		label, set.Tokens(), r.ttl, strings.Join(r.argv, " "))
	code, lost := a.supervise(cmd, ch, set, label, r.grace, r.sigs, "it will not be restarted")
	if lost {
		_ = set.Release(context.Background()) // the members still held
		return exitLost
	}
	if err := set.Release(context.Background()); errors.Is(err, distlock.ErrNotHeld) {
		// A member freed (a force-release) or expired before a renewal
		// could tell: the command may not have run alone to its end.
		fmt.Fprintf(a.stderr, "distlock run: the command finished, but %s was no longer held whole at its release: %v\n",
			label, strings.TrimPrefix(err.Error(), "distlock: "))
		return exitLost
	} else if err != nil {
		fmt.Fprintf(a.stderr, "distlock run: the command finished, but releasing %s failed: %v\n"+
			"What was not released stays locked until its ttl (%v) runs out.\n", label, strings.TrimPrefix(err.Error(), "distlock: "), r.ttl)
	} else {
		r.notes.say("distlock run: released %s; the command exited with %d\n", label, code)
	}
	return code
}

// setEnv is the environment of a command run under a set of locks: the
// first name's variables as for one lock (DISTLOCK_NAME, DISTLOCK_FENCE,
// DISTLOCK_OWNER), and for each name, numbered from 1 in the order given,
// DISTLOCK_NAME_i, DISTLOCK_FENCE_i and DISTLOCK_OWNER_i; DISTLOCK_NAMES
// is their count.
func setEnv(env []string, names []string, set *distlock.LeaseSet) []string {
	env = append(env,
		"DISTLOCK_NAME="+names[0],
		"DISTLOCK_FENCE="+strconv.FormatUint(set.Token(names[0]), 10),
		"DISTLOCK_OWNER="+set.Owner(names[0]),
		"DISTLOCK_NAMES="+strconv.Itoa(len(names)))
	for i, n := range names {
		k := strconv.Itoa(i + 1)
		env = append(env, "DISTLOCK_NAME_"+k+"="+n,
			"DISTLOCK_FENCE_"+k+"="+strconv.FormatUint(set.Token(n), 10),
			"DISTLOCK_OWNER_"+k+"="+set.Owner(n))
	}
	return env
}
