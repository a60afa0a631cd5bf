package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// envNodeTimeout sets a Redlock quorum's per-node timeout.
const envNodeTimeout = "DISTLOCK_NODE_TIMEOUT"

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

// checkNodes asks every node of a Redlock quorum at once, until each
// answered, or until a majority answered and the others had grace more
// (the per-node timeout), so that one hung node costs a command no more
// than that. A node that did not answer is left in (the quorum tolerates
// it); a majority must answer. Its errors are *cliError.
func checkNodes(ctx context.Context, q *quorum.Engine, setting string, grace time.Duration) error {
	nodes := q.NodeEngines()
	errs := pingAll(ctx, nodes, grace)
	if err := interrupted(ctx); err != nil {
		return err
	}
	var down []string
	for i, err := range errs {
		if err != nil {
			down = append(down, fmt.Sprintf("cannot reach %s: %v.\n"+
				"Check that Redis is running there and that %s points at it.", describe(nodes[i]), err, setting))
		}
	}
	if len(nodes)-len(down) < q.Majority() {
		return &cliError{code: exitBackend, msg: fmt.Sprintf("only %d of %d Redlock nodes answer, %d needed:\n%s",
			len(nodes)-len(down), len(nodes), q.Majority(), strings.Join(down, "\n"))}
	}
	return nil
}

// errNoAnswer: a Redlock node had not answered when a majority had, and
// its grace was over.
var errNoAnswer = errors.New("no answer in time (the other nodes answered)")

// pinger is a node engine that can be pinged (Redis); others are asked
// about one lock.
type pinger interface{ Ping(context.Context) error }

// ping checks that n answers.
func ping(ctx context.Context, n engine.Engine) error {
	if p, ok := n.(pinger); ok {
		return p.Ping(ctx)
	}
	_, err := n.Inspect(ctx, checkName)
	return err
}

// pingAll pings every node at once, each within pingTimeout,
// and returns each one's error: when every one answered, or once a
// majority answered without error and grace has passed since (the ones
// still out then get errNoAnswer).
func pingAll(ctx context.Context, nodes []engine.Engine, grace time.Duration) []error {
	type answer struct {
		i   int
		err error
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel() // ends the pings still out
	ch := make(chan answer, len(nodes))
	for i, n := range nodes {
		go func() { ch <- answer{i, ping(pctx, n)} }()
	}
	errs := make([]error, len(nodes))
	answered := make([]bool, len(nodes))
	ok, majority := 0, len(nodes)/2+1
	var graceOver <-chan time.Time
	for n := 0; n < len(nodes); n++ {
		select {
		case a := <-ch:
			errs[a.i], answered[a.i] = a.err, true
			if a.err == nil {
				ok++
			}
			if ok == majority && graceOver == nil {
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

// pingGrace is how long the pings of a Redlock backend wait for the nodes
// still out once a majority answered: the quorum's per-node timeout.
func pingGrace(nodeTimeout time.Duration) time.Duration {
	if nodeTimeout > 0 {
		return nodeTimeout
	}
	return quorum.DefaultMaxNodeTimeout
}
