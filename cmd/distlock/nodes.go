package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
)

// envNodeTimeout sets a Redlock quorum's per-node timeout.
const envNodeTimeout = "DISTLOCK_NODE_TIMEOUT"

// redisNodes are the Redis deployments of a backend: one, or the nodes of
// a Redlock quorum, in the order of their URLs.
type redisNodes struct {
	rdbs  []goredis.UniversalClient
	addrs []string // of rdbs, for messages: "10.0.0.5:6379" or "cluster a:6379,b:6379"
	engs  []engine.Engine
}

// closeConns closes the connections (the engines belong to whoever was
// given them: a quorum closes its nodes).
func (ns *redisNodes) closeConns() {
	for _, rdb := range ns.rdbs {
		_ = rdb.Close()
	}
}

// nodeTimeout reads DISTLOCK_NODE_TIMEOUT: 0 when unset (the quorum's
// default), a usage error when it is not a positive duration.
func (a *app) nodeTimeout() (time.Duration, error) {
	v := strings.TrimSpace(a.getenv(envNodeTimeout))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, usageErr("%s=%q: want a positive duration such as 50ms or 1s.", envNodeTimeout, v)
	}
	return d, nil
}

// openNodes connects to every URL and pings them all at once: a single
// node within pingTimeout; several (Redlock) until each answered, or until
// a majority answered and the others had grace more (the per-node
// timeout), so that one hung node costs a command no more than that. A
// node that did not answer is left in (the quorum tolerates it) and named
// in down; a majority must answer. Its errors are *cliError.
func openNodes(ctx context.Context, urls []string, grace time.Duration) (ns *redisNodes, down []string, err error) {
	ns = &redisNodes{}
	for _, url := range urls {
		rdb, addr, err := newRedisClient(url)
		if err != nil {
			ns.closeConns()
			return nil, nil, err
		}
		ns.rdbs, ns.addrs = append(ns.rdbs, rdb), append(ns.addrs, addr)
		eng, err := redisengine.New(rdb)
		if err != nil {
			ns.closeConns()
			return nil, nil, &cliError{code: exitFailed, msg: err.Error()}
		}
		ns.engs = append(ns.engs, eng)
	}
	errs := pingAll(ctx, ns.rdbs, grace)
	if ctx.Err() != nil {
		ns.closeConns()
		return nil, nil, ctx.Err()
	}
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("cannot reach Redis at %s: %v.\n"+
				"Check that Redis is running there and that %s (or --redis) points at it.", ns.addrs[i], err, envRedis))
		}
	}
	if len(urls) == 1 && len(down) == 1 {
		ns.closeConns()
		return nil, nil, &cliError{code: exitBackend, msg: down[0]}
	}
	if majority := len(urls)/2 + 1; len(urls)-len(down) < majority {
		ns.closeConns()
		return nil, nil, &cliError{code: exitBackend, msg: fmt.Sprintf("only %d of %d Redlock nodes answer, %d needed:\n%s",
			len(urls)-len(down), len(urls), majority, strings.Join(down, "\n"))}
	}
	return ns, down, nil
}

// errNoAnswer: a Redlock node had not answered the ping when a majority
// had, and its grace was over.
var errNoAnswer = errors.New("no answer in time (the other nodes answered)")

// pingAll pings every client at once, each within pingTimeout, and returns
// each one's error: when every one answered, or once a majority answered
// without error and grace has passed since (the ones still out then get
// errNoAnswer).
func pingAll(ctx context.Context, rdbs []goredis.UniversalClient, grace time.Duration) []error {
	type answer struct {
		i   int
		err error
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel() // ends the pings still out
	ch := make(chan answer, len(rdbs))
	for i, rdb := range rdbs {
		go func() { ch <- answer{i, rdb.Ping(pctx).Err()} }()
	}
	errs := make([]error, len(rdbs))
	answered := make([]bool, len(rdbs))
	ok, majority := 0, len(rdbs)/2+1
	var graceOver <-chan time.Time
	for n := 0; n < len(rdbs); n++ {
		select {
		case a := <-ch:
			errs[a.i], answered[a.i] = a.err, true
			if a.err == nil {
				ok++
			}
			if ok == majority && len(rdbs) > 1 && graceOver == nil {
				t := time.NewTimer(grace)
				defer t.Stop()
				graceOver = t.C
			}
		case <-graceOver:
			for i := range errs {
				if !answered[i] {
					errs[i] = errNoAnswer
				}
			}
			return errs
		}
	}
	return errs
}

// openQuorum makes the Redlock quorum of nodes, with the per-node timeout
// of DISTLOCK_NODE_TIMEOUT (when set) and opts.
func openQuorum(nodes []engine.Engine, nodeTimeout time.Duration, opts ...quorum.Option) (*quorum.Engine, error) {
	if nodeTimeout > 0 {
		opts = append(opts, quorum.WithNodeTimeout(nodeTimeout))
	}
	q, err := quorum.New(nodes, opts...)
	if err != nil {
		return nil, &cliError{code: exitFailed, msg: err.Error()}
	}
	return q, nil
}

// pingGrace is how long the pings of a Redlock backend wait for the nodes
// still out once a majority answered: the quorum's per-node timeout.
func pingGrace(nodeTimeout time.Duration) time.Duration {
	if nodeTimeout > 0 {
		return nodeTimeout
	}
	return quorum.DefaultMaxNodeTimeout
}
