package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
)

// electSynopsis is the one-line usage of distlock elect.
const electSynopsis = "distlock elect [flags] NAME -- COMMAND [ARGS...]"

// electLine names the parts of distlock elect's command line in its usage errors.
var electLine = commandLine{synopsis: electSynopsis, name: "the election NAME", command: "the COMMAND to run while leader"}

// cmdElect implements distlock elect: campaign for the election NAME and
// run COMMAND only while leader.
func (a *app) cmdElect(args []string) int {
	const cmd = "elect"
	fs := flagSet(cmd)
	ttl := durationFlag(fs, "ttl", distlock.DefaultTTL)
	grace := durationFlag(fs, "grace", defaultGrace)
	value := stringFlag(fs, "", "value")
	redisURL := stringFlag(fs, "", "redis", "backend")
	verbose := switchFlag(fs, notes{a.stderr}, "v", "verbose")
	once := boolFlag(fs, "once")
	fair := switchFlag(fs, distlock.WithFair(), "fair")
	name, argv, err := parseRunArgs(fs, args, electLine)
	if err != nil {
		return a.flagError(cmd, err)
	}
	if err := checkTTL(*ttl); err != nil {
		return a.fail(cmd, err)
	}
	if *grace < 0 {
		return a.usage(cmd, "--grace cannot be negative (got %v)", *grace)
	}
	switch {
	case *value == "" && flagGiven(fs, "value"):
		// An election's value is never empty (distlock.Campaign refuses
		// it): an empty --value is a mistake, not a wish for the default.
		return a.usage(cmd, "--value cannot be empty (leave it out for the default: host and pid)")
	case *value == "":
		*value = defaultMetadata("distlock elect", nil)
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	next := "it will be started again once this process is elected again"
	if *once {
		next = "it will not be restarted (--once)"
	}
	// The backend is opened (and checked) once: after a loss, which a
	// backend that stopped answering causes most often, the campaign goes
	// on through the same Client, whose waits outlast an outage up to the
	// failure budget (as a candidate's that was waiting all along does),
	// rather than a new reachability check that gives up after pingTimeout.
	open := func(ctx context.Context) (*backend, error) { return a.openBackend(ctx, cmd, *redisURL) }
	for {
		var l *distlock.Leadership
		b, lease, code := acquireHeldOn(a, cmd, name, open, 0, sigs, func(ctx context.Context, c *distlock.Client) (*distlock.Lease, error) {
			var err error
			l, err = c.Campaign(ctx, name, *value, distlock.WithTTL(*ttl), *fair)
			if err != nil {
				return nil, err
			}
			return l.Lease(), nil
		})
		if lease == nil {
			return code
		}
		a.noteTTL(cmd, *ttl, lease.TTL(), b.where)
		code, lost, started := a.lead(cmd, b, l, argv, *grace, sigs, next, verbose)
		if !lost || *once || !started {
			b.close(releaseLeases)
			return code
		}
		open = func(context.Context) (*backend, error) { return b, nil }
		fmt.Fprintf(a.stderr, "distlock elect: campaigning for %q again\n", name)
	}
}

// lead runs the command while l lasts. It reports the exit code, whether
// the leadership was lost, and whether the command started.
func (a *app) lead(cmd string, b *backend, l *distlock.Leadership, argv []string, grace time.Duration,
	sigs <-chan os.Signal, next string, verbose *notes) (code int, lost, started bool) {
	name := l.Name()
	if err := l.Err(); err != nil {
		fmt.Fprintf(a.stderr, "distlock elect: lost the leadership of %q before the command started: %v\n",
			name, strings.TrimPrefix(err.Error(), "distlock: "))
		return exitLost, true, true // nothing ran: campaign again
	}
	term := strconv.FormatUint(l.Term(), 10)
	env := append(os.Environ(),
		"DISTLOCK_NAME="+name,
		"DISTLOCK_TERM="+term,
		"DISTLOCK_FENCE="+term,
		"DISTLOCK_OWNER="+l.Lease().Owner())
	ch, err := a.startGuarded(cmd, argv, env, grace, l.Lease())
	if err != nil {
		_ = l.Resign(context.Background())
		fmt.Fprintf(a.stderr, "distlock elect: cannot run %s: %v\n", argv[0], err)
		return startErrorCode(err), false, false
	}
	verbose.say("distlock elect: elected leader of %q (term %s); running %s\n", name, term, strings.Join(argv, " "))
	code, lost = a.supervise(cmd, ch, l.Lease(), name, grace, sigs, next)
	if lost {
		return exitLost, true, true
	}
	if err := l.Resign(context.Background()); err != nil && !errors.Is(err, distlock.ErrNotHeld) {
		fmt.Fprintf(a.stderr, "distlock elect: the command finished, but resigning %q failed: %v\n", name, strings.TrimPrefix(err.Error(), "distlock: "))
	} else {
		verbose.say("distlock elect: resigned %q; the command exited with %d\n", name, code)
	}
	return code, false, true
}

// leaderJSON is one line of distlock leader --json.
type leaderJSON struct {
	Name    string `json:"name"`
	Elected bool   `json:"elected"`
	Value   string `json:"value,omitempty"`
	Term    uint64 `json:"term,omitempty"`
	TTLMs   int64  `json:"ttl_ms,omitempty"`
}

// cmdLeader implements distlock leader: print the leader of an election,
// or follow its changes.
func (a *app) cmdLeader(args []string) int {
	const cmd = "leader"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	watch := boolFlag(fs, "watch", "w")
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME"); !ok {
		return code
	}
	name := pos[0]
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	show := func(l distlock.Leader) {
		if *asJSON {
			a.printJSONLine(leaderJSON{Name: name, Elected: l.Elected(), Value: l.Value, Term: l.Term, TTLMs: l.TTL.Milliseconds()})
			return
		}
		if !l.Elected() {
			fmt.Fprintf(a.stdout, "%s: no leader\n", name)
			return
		}
		fmt.Fprintf(a.stdout, "%s: leader %q, term %d, lease %s left\n", name, l.Value, l.Term, fmtTTL(l.TTL))
	}
	if !*watch {
		l, err := b.client.Leader(ctx, name)
		if err != nil && !errors.Is(err, distlock.ErrNoLeader) {
			return a.fail(cmd, explain(err, name, b.where))
		}
		show(l)
		if !l.Elected() {
			return exitFailed
		}
		return exitOK
	}
	changes, err := b.client.Observe(ctx, name)
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	for l := range changes {
		show(l)
	}
	return exitOK // interrupted
}
