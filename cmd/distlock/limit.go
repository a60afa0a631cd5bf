package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// cmdLimit implements distlock limit: set the stored limit of a semaphore
// (Semaphore.SetLimit; a server's POST /v1/locks/{name}/limit).
func (a *app) cmdLimit(args []string) int {
	const cmd = "limit"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	pos, err := parseInterspersed(fs, args)
	if n := negativeNumber(args); err != nil && n != "" {
		// A negative LIMIT reads as a flag: it is a bad LIMIT.
		return a.badLimit(cmd, n)
	}
	if code, ok := a.positional(cmd, pos, err, "NAME", "LIMIT"); !ok {
		return code
	}
	name := pos[0]
	limit, err := strconv.Atoi(pos[1])
	if err != nil || rules.Limit(limit) != nil {
		return a.badLimit(cmd, pos[1])
	}
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	sem := b.client.Semaphore(name, limit)
	if err := sem.SetLimit(ctx, limit); err != nil {
		var ue *distlock.UnsupportedError
		if errors.As(err, &ue) {
			return a.fail(cmd, &cliError{code: exitUsage, msg: fmt.Sprintf("the lock backend (%s) cannot keep the limit %d of %q: %s.\n"+
				"Redlock keeps semaphores of limit 1 only; use one lock authority (a Redis, or a distlock server) for larger ones",
				b.where, limit, name, ue.Reason)})
		}
		return a.fail(cmd, explain(err, name, b.where))
	}
	info, err := sem.Inspect(ctx)
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	info.Name = name
	if *asJSON {
		a.printJSON(toJSON(info))
		return exitOK
	}
	used := 0
	for _, h := range info.Holders {
		used += h.Weight
	}
	fmt.Fprintf(a.stdout, "the semaphore %q has limit %d now (%s held, %d waiting); "+
		"every client is served under it, whatever limit it declares\n", name, info.Limit, permits(used), info.Waiters)
	return exitOK
}

// badLimit reports arg, a LIMIT out of range or no number: a usage error.
func (a *app) badLimit(cmd, arg string) int {
	return a.usage(cmd, "LIMIT %q: a semaphore's limit is a positive whole number, from 1 to %d", arg, engine.RWPermits-1)
}

// negativeNumber returns the first argument before "--" that is a negative
// whole number (which package flag takes for a flag), or "".
func negativeNumber(args []string) string {
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if n, err := strconv.Atoi(arg); err == nil && n < 0 {
			return arg
		}
	}
	return ""
}

// permits renders a count of permits: "1 permit", "2 permits".
func permits(n int) string {
	if n == 1 {
		return "1 permit"
	}
	return strconv.Itoa(n) + " permits"
}
