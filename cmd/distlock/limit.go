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
	if code, ok := a.positional(cmd, pos, err, "NAME", "LIMIT"); !ok {
		return code
	}
	name := pos[0]
	limit, err := strconv.Atoi(pos[1])
	if err != nil || rules.Limit(limit) != nil {
		return a.usage(cmd, "LIMIT %q: a semaphore's limit is a whole number from 1 to %d", pos[1], engine.RWPermits-1)
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
	fmt.Fprintf(a.stdout, "the semaphore %q has limit %d now (%d permits held, %d waiting); "+
		"every client is served under it, whatever limit it declares\n", name, info.Limit, used, info.Waiters)
	return exitOK
}
