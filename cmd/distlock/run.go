package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// Defaults of distlock run and distlock acquire.
const (
	defaultWait  = 10 * time.Second
	defaultGrace = 5 * time.Second
	// groupPoll is how often distlock checks whether a process group that
	// was told to stop is gone.
	groupPoll = 10 * time.Millisecond
	// killWait bounds the wait for a SIGKILLed group to disappear.
	killWait = 2 * time.Second
)

// runSynopsis is the one-line usage of distlock run.
const runSynopsis = "distlock run [flags] NAME -- COMMAND [ARGS...]"

// runLine names the parts of distlock run's command line in its usage errors.
var runLine = commandLine{synopsis: runSynopsis, name: "the lock NAME", command: "the COMMAND to run after the lock name"}

// cmdRun implements distlock run.
func (a *app) cmdRun(args []string) int {
	const cmd = "run"
	fs := flagSet(cmd)
	ttl := durationFlag(fs, "ttl", distlock.DefaultTTL)
	wait := durationFlag(fs, "wait", defaultWait)
	grace := durationFlag(fs, "grace", defaultGrace)
	metadata := stringFlag(fs, "", "metadata")
	redisURL := stringFlag(fs, "", "redis", "backend")
	verbose := switchFlag(fs, notes{a.stderr}, "v", "verbose")
	fair := switchFlag(fs, distlock.WithFair(), "fair")
	kind := kindFlags(fs)
	also := namesFlag(fs, "also")

	name, argv, err := parseRunArgs(fs, args, runLine)
	if err == nil {
		err = kind.check(fs)
	}
	if err == nil && len(*also) > 0 && flagGiven(fs, "n", "limit", "weight", "shared", "exclusive") {
		err = usageErr("--also takes mutexes only: it cannot be given with --limit, --weight, --shared or --exclusive")
	}
	if err != nil {
		return a.flagError(cmd, err)
	}
	if err := checkTTL(*ttl); err != nil {
		return a.fail(cmd, err)
	}
	if *wait < 0 || *grace < 0 {
		return a.usage(cmd, "--wait and --grace cannot be negative (got --wait %v, --grace %v)", *wait, *grace)
	}
	if *metadata == "" {
		*metadata = defaultMetadata("distlock run", argv)
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	if len(*also) > 0 {
		return a.runSet(runSpec{names: append([]string{name}, *also...), argv: argv, redisURL: *redisURL,
			ttl: *ttl, wait: *wait, grace: *grace, notes: verbose, sigs: sigs},
			distlock.WithTTL(*ttl), distlock.WithMetadata(*metadata), *fair)
	}

	b, lease, code := a.acquireWith(cmd, name, *redisURL, *wait, sigs, func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
		return kind.take(ctx, c, name, *wait, distlock.WithTTL(*ttl), distlock.WithMetadata(*metadata), *fair)
	})
	if lease == nil {
		return code
	}
	defer b.close(releaseLeases)
	a.noteTTL(cmd, *ttl, lease.TTL(), b.where)
	if err := lease.Err(); err != nil {
		return a.fail(cmd, &cliError{code: exitLost, msg: fmt.Sprintf("lost the lock on %q before the command started: %v",
			name, strings.TrimPrefix(err.Error(), "distlock: "))})
	}

	env := append(os.Environ(),
		"DISTLOCK_NAME="+name,
		"DISTLOCK_FENCE="+strconv.FormatUint(lease.Token(), 10),
		"DISTLOCK_OWNER="+lease.Owner())
	ch, err := a.startGuarded(cmd, argv, env, *grace, lease)
	if err != nil {
		_ = lease.Release(context.Background())
		fmt.Fprintf(a.stderr, "distlock run: cannot run %s: %v\n", argv[0], err)
		return startErrorCode(err)
	}
	verbose.say("distlock run: acquired %s%q (fence %d, ttl %v, renewed every %v); running %s\n",
		kind.describe(), name, lease.Token(), *ttl, (*ttl / 3).Round(time.Millisecond), strings.Join(argv, " "))

	return a.superviseRun(cmd, ch, lease, name, *ttl, *grace, verbose, sigs)
}

// superviseRun runs the child under the lease until it exits (or the lease
// is lost, when it is stopped), then releases the lock and returns the
// child's exit code (exitLost after a loss); the release goes to verbose.
func (a *app) superviseRun(cmd string, ch *child, lease *distlock.Lease, name string, ttl, grace time.Duration, verbose *notes, sigs chan os.Signal) int {
	code, lost := a.supervise(cmd, ch, lease, name, grace, sigs, "it will not be restarted")
	if lost {
		// The lock is not ours any more: nothing to release.
		return exitLost
	}
	if err := lease.Release(context.Background()); errors.Is(err, distlock.ErrNotHeld) {
		// Freed (a force-release) or expired before a renewal could tell:
		// the command may not have run alone to its end.
		fmt.Fprintf(a.stderr, "distlock run: the command finished, but %q was no longer held at its release: %v\n",
			name, strings.TrimPrefix(err.Error(), "distlock: "))
		return exitLost
	} else if err != nil {
		fmt.Fprintf(a.stderr, "distlock run: the command finished, but releasing %q failed: %v\n"+
			"It stays locked until its ttl (%v) runs out.\n", name, strings.TrimPrefix(err.Error(), "distlock: "), ttl)
	} else {
		verbose.say("distlock run: released %q; the command exited with %d\n", name, code)
	}
	return code
}

// noteTTL says on standard error when the backend keeps another ttl than
// the one asked for (etcd: whole seconds, at least 2s).
func (a *app) noteTTL(cmd string, asked, kept time.Duration, where string) {
	if kept != asked {
		fmt.Fprintf(a.stderr, "distlock %s: %s keeps a ttl of %v, not --ttl %v (rounded up to what it can keep)\n", cmd, where, kept, asked)
	}
}

// commandLine names the parts of a command line NAME -- COMMAND (distlock
// run's, distlock elect's) in its usage errors.
type commandLine struct {
	synopsis string // the one-line usage
	name     string // "the lock NAME"
	command  string // "the COMMAND to run after the lock name"
}

// parseRunArgs parses the command line of distlock run and distlock elect,
// [flags] NAME [flags] -- COMMAND [ARGS...], into NAME and the command.
// This is the one place of its rule:
//   - Flags go before NAME, and after NAME up to a "--" or the first
//     argument that is not a flag; from there on everything is COMMAND
//     ("NAME cmd --ttl" passes --ttl to cmd).
//   - A "--" before NAME ends the flags: the next argument is NAME (which
//     may then begin with "-"), and COMMAND follows a second "--" (or comes
//     right after NAME). No flag is read after it.
//   - COMMAND's first word cannot begin with "-": that is a "--" too many or
//     a flag after the separator, which exec would only report as not found
//     once the lock is taken. Every mistake is a usage error, found before
//     anything connects.
func parseRunArgs(fs *flag.FlagSet, args []string, line commandLine) (name string, argv []string, err error) {
	rest, dashdash, err := parseFlags(fs, args)
	if err != nil {
		return "", nil, err
	}
	if len(rest) == 0 || rest[0] == "" || rest[0] == "--" {
		return "", nil, usageErr("missing %s: %s", line.name, line.synopsis)
	}
	name, tail := rest[0], rest[1:]
	switch {
	case len(tail) > 0 && tail[0] == "--": // NAME -- COMMAND, -- NAME -- COMMAND
		tail = tail[1:]
	case !dashdash && len(tail) > 0 && len(tail[0]) > 1 && tail[0][0] == '-':
		// Flags after NAME: up to "--" (consumed) or the first argument
		// that is not one.
		if tail, _, err = parseFlags(fs, tail); err != nil {
			return "", nil, err
		}
	}
	switch {
	case len(tail) == 0:
		return "", nil, usageErr("missing %s: %s", line.command, line.synopsis)
	case tail[0] == "--":
		return "", nil, usageErr(`one "--" too many before COMMAND: %s`, line.synopsis)
	case strings.HasPrefix(tail[0], "-"):
		return "", nil, usageErr(`COMMAND cannot begin with "-" (got %q): flags go before the "--" that precedes COMMAND `+
			`(a program whose name begins with "-" is given by its path, ./%s): %s`, tail[0], tail[0], line.synopsis)
	}
	return name, tail, nil
}

// flagGiven reports whether any of the named flags was given.
func flagGiven(fs *flag.FlagSet, names ...string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = true
			}
		}
	})
	return set
}

// runAcquire connects to the backend and acquires name, waiting up to wait
// (one attempt when wait is 0). A signal in sigs interrupts it. On failure
// it reports the error and returns a nil lease and the exit code.
func (a *app) runAcquire(cmd, name, redisURL string, wait time.Duration, sigs <-chan os.Signal,
	opts ...distlock.Option) (*backend, *distlock.Lease, int) {
	return a.acquireWith(cmd, name, redisURL, wait, sigs, func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
		return acquireLease(ctx, c, name, wait, opts...)
	})
}

// acquireWith connects to the backend and takes a lease on name with take.
// A wait budget (wait > 0) counts from the start and covers connecting
// too: a backend that does not answer ends the command when the budget
// does, not after pingTimeout. A signal in sigs interrupts it. On failure
// it reports the error and returns a nil lease and the exit code.
func (a *app) acquireWith(cmd, name, redisURL string, wait time.Duration, sigs <-chan os.Signal,
	take func(context.Context, *distlock.Client) (*distlock.Lease, error)) (*backend, *distlock.Lease, int) {
	return acquireHeld(a, cmd, name, redisURL, wait, sigs, take)
}

// holding is what distlock run holds and supervises: a *distlock.Lease,
// or with --also a *distlock.LeaseSet.
type holding interface {
	Done() <-chan struct{}
	Err() error
	Deadline() time.Time
	Release(ctx context.Context) error
}

// acquireHeld is acquireWith for a lease or a set of leases (take's H).
func acquireHeld[H holding](a *app, cmd, name, redisURL string, wait time.Duration, sigs <-chan os.Signal,
	take func(context.Context, *distlock.Client) (H, error)) (*backend, H, int) {
	return acquireHeldOn(a, cmd, name, func(ctx context.Context) (*backend, error) {
		return a.openBackend(ctx, cmd, redisURL)
	}, wait, sigs, take)
}

// acquireHeldOn is acquireHeld on the backend open returns (a new one, or
// one already open: distlock elect campaigns again on its own). On failure
// or a signal it closes that backend.
func acquireHeldOn[H holding](a *app, cmd, name string, open func(context.Context) (*backend, error), wait time.Duration,
	sigs <-chan os.Signal, take func(context.Context, *distlock.Client) (H, error)) (*backend, H, int) {
	var none H
	ctx, cancel := context.WithCancel(context.Background())
	if wait > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), wait)
	}
	defer cancel()
	type result struct {
		b     *backend
		lease H
		err   error
	}
	done := make(chan result, 1)
	go func() {
		b, err := open(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		lease, err := take(ctx, b.client)
		done <- result{b, lease, err}
	}()
	var r result
	select {
	case r = <-done:
	case sig := <-sigs:
		cancel()
		r = <-done
		if r.b != nil && r.err == nil {
			_ = r.lease.Release(context.Background())
		}
		if r.b != nil {
			r.b.close(releaseLeases)
		}
		fmt.Fprintf(a.stderr, "distlock %s: interrupted (%v, signal %d) while waiting for %q; the command was not started\n", cmd, sig, signalNumber(sig), name)
		return nil, none, exitSignal + signalNumber(sig)
	}
	if r.err != nil {
		where := ""
		if r.b != nil {
			where = r.b.where
		}
		// Said before the backend is closed: closing waits (up to the
		// release timeout) for a request still in flight on a backend
		// that stopped answering, so that a late grant is undone.
		code := a.fail(cmd, explain(r.err, refusedName(r.err, name), where))
		if r.b != nil {
			r.b.close(releaseLeases)
		}
		return nil, none, code
	}
	return r.b, r.lease, exitOK
}

// acquireLease acquires name on c, waiting up to wait; with wait 0 it makes
// one attempt.
func acquireLease(ctx context.Context, c *distlock.Client, name string, wait time.Duration, opts ...distlock.Option) (*distlock.Lease, error) {
	if wait <= 0 {
		return c.TryAcquire(ctx, name, opts...)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return c.Acquire(wctx, name, opts...)
}

// startGuarded starts the command (startChild) with its guard, which is
// started first and told, in one write as soon as the command runs, its
// process group and the deadline of lease: a distlock killed or stopped at
// any moment after that write leaves no command running past its lease
// (see guardArg). Nothing distlock does before supervise (a progress line
// on a terminal that stops it with SIGTTOU, say) comes first. cmd names
// the distlock command, for messages; grace is the guard's between
// SIGTERM and SIGKILL.
func (a *app) startGuarded(cmd string, argv, env []string, grace time.Duration, lease holding) (*child, error) {
	g := a.startGuard(cmd, grace)
	ch, err := startChild(argv, env)
	if err != nil {
		g.standDown()
		return nil, err
	}
	ch.guard = g
	ch.teller = tellDeadlines(ch, lease)
	return ch, nil
}

// supervise waits for the command to exit while the lease holds. When the
// lease is lost it stops the command's process group (SIGTERM, then SIGKILL
// after grace) and reports lost; it never restarts the command. Signals in
// sigs, and the relayedSignals, are passed on to the group; next says what happens after a loss
// (cmd is the command name, for messages). It returns the command's exit
// status.
func (a *app) supervise(cmd string, ch *child, lease holding, name string, grace time.Duration, sigs <-chan os.Signal, next string) (code int, lost bool) {
	// The guard stops the group if distlock dies before it could (see
	// guardArg); supervise returns only once the group is gone or stopped.
	defer ch.guard.standDown()
	defer ch.stopRelay()
	relay := ch.relayed()
	exited := make(chan int, 1)
	go func() { exited <- ch.wait() }()
	defer ch.restoreTerminal()

	var (
		leaseDone = lease.Done()
		killTimer *time.Timer
		kill      <-chan time.Time
		lostAt    time.Time
		termSent  bool
	)
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	teller := ch.teller
	defer teller.stop()
	// The signals go before the words: a write on a terminal can stop
	// distlock (SIGTTOU, for a background job with "stty tostop"), and the
	// command must not run on without the lock meanwhile.
	loseAt := func(now time.Time) {
		lost, lostAt, leaseDone = true, now, nil
		ch.terminateLost()
		termSent = true
		fmt.Fprintf(a.stderr, "distlock %s: %v\n"+
			"distlock %s: stopping the command: SIGTERM to its process group now, SIGKILL in %v; %s\n",
			cmd, strings.TrimPrefix(lease.Err().Error(), "distlock: "), cmd, grace, next)
	}
	for {
		select {
		case code = <-exited:
			ch.restoreTerminal()
			if !lost && leaseLost(lease) {
				loseAt(time.Now()) // lost as the command finished
			}
			if lost {
				if !termSent {
					ch.terminateLost()
				}
				a.stopGroup(ch, lostAt.Add(grace))
				return exitLost, true
			}
			if ch.groupAlive() {
				ch.terminate()
				fmt.Fprintf(a.stderr, "distlock %s: the command exited but left processes in its process group; "+
					"stopping them (SIGTERM, SIGKILL in %v) before releasing %q\n", cmd, grace, name)
				a.stopGroup(ch, time.Now().Add(grace))
			}
			return code, false
		case <-leaseDone:
			if !leaseLost(lease) {
				leaseDone = nil // released: cannot happen while supervising
				continue
			}
			loseAt(time.Now())
			killTimer = time.NewTimer(grace)
			kill = killTimer.C
		case <-kill:
			kill = nil
			ch.kill()
			fmt.Fprintf(a.stderr, "distlock %s: the command still runs %v after SIGTERM: SIGKILL to its process group\n", cmd, grace)
		case <-teller.ticks():
			if !lost {
				teller.update()
			}
		case sig := <-sigs:
			ch.signal(sig)
		case sig := <-relay:
			ch.signal(sig)
		}
	}
}

// stopGroup waits until the process group is gone or deadline passes, and
// then kills what is left of it.
func (a *app) stopGroup(ch *child, deadline time.Time) {
	for ch.groupAlive() && time.Now().Before(deadline) {
		time.Sleep(groupPoll)
	}
	if !ch.groupAlive() {
		return
	}
	ch.kill()
	end := time.Now().Add(killWait)
	for ch.groupAlive() && time.Now().Before(end) {
		time.Sleep(groupPoll)
	}
}

// leaseLost reports whether the lease was lost (rather than released).
func leaseLost(l holding) bool {
	return errors.Is(l.Err(), distlock.ErrLeaseLost)
}

// checkTTL checks a --ttl value with the library's rule (rules.TTL).
func checkTTL(ttl time.Duration) error {
	var ae *engine.ArgumentError
	if errors.As(rules.TTL(ttl), &ae) {
		return usageErr("--ttl: %s (the lease is renewed every ttl/3)", ae.Reason)
	}
	return nil
}

// defaultMetadata says who holds a lock, for distlock status: the tool,
// host, process id and command, cut to the library's limit.
func defaultMetadata(tool string, argv []string) string {
	host, _ := os.Hostname()
	s := fmt.Sprintf("%s on %s (pid %d)", tool, host, os.Getpid())
	if len(argv) > 0 {
		s += ": " + strings.Join(argv, " ")
	}
	if len(s) > distlock.MaxMetadataLen {
		s = strings.ToValidUTF8(s[:distlock.MaxMetadataLen], "")
	}
	return s
}
