package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/internal/redistest"
)

// termNode is a quorum node of the campaigner's: its acquires wait
// acquireDelay before they are sent (a slow node: its grant lands after
// the quorum decided), and its phase-2 raises wait raiseDelay (so that a
// late grant lands while phase 2 is still under way). It forwards what an
// election needs of a node (FenceRaiser, MetadataSetter).
type termNode struct {
	engine.Engine
	acquireDelay, raiseDelay time.Duration
}

func (n termNode) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := pause(ctx, n.acquireDelay); err != nil {
		return engine.Grant{}, err
	}
	return n.Engine.Acquire(ctx, r)
}

func (n termNode) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if err := pause(ctx, n.raiseDelay); err != nil {
		return false, err
	}
	return n.Engine.(engine.FenceRaiser).RaiseFence(ctx, r)
}

func (n termNode) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	return n.Engine.(engine.MetadataSetter).SetMetadata(ctx, r)
}

// pause waits d (a node's injected slowness), or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// termDelays are the campaigner's slow nodes: the last node's grants land
// after the decision (acquire), while the raises of phase 2 are still out
// (raise: every node's). The per-node timeout is far above both.
const (
	termAcquireDelay = 20 * time.Millisecond
	termRaiseDelay   = 80 * time.Millisecond
	termNodeTimeout  = 2 * time.Second
)

// slowTermNodes wraps nodes as the campaigner's termNodes: the last one
// slow to grant, all slow to raise.
func slowTermNodes(nodes []engine.Engine) []engine.Engine {
	out := make([]engine.Engine, len(nodes))
	for i, e := range nodes {
		out[i] = slowTermNode(e, i == len(nodes)-1)
	}
	return out
}

// slowTermNode is one of slowTermNodes: slow to raise, and slow to grant
// when last.
func slowTermNode(e engine.Engine, last bool) engine.Engine {
	n := termNode{Engine: e, raiseDelay: termRaiseDelay}
	if last {
		n.acquireDelay = termAcquireDelay
	}
	return n
}

// observed is what one observer saw: the terms of the elected states, in
// order.
type observed struct {
	mu    sync.Mutex
	terms []uint64
}

// add records term, unless it repeats the last one.
func (o *observed) add(term uint64) {
	o.mu.Lock()
	if len(o.terms) == 0 || o.terms[len(o.terms)-1] != term {
		o.terms = append(o.terms, term)
	}
	o.mu.Unlock()
}

func (o *observed) saw(term uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.terms, term)
}

func (o *observed) all() []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.terms)
}

// checkElectionTerms campaigns terms times on campaigner, name, while an
// Observe stream and a Leader poller, each on a Client of its own
// (watchers), follow the election. Every term they report must be a term
// some leader was granted (Leadership.Term), and neither may ever report a
// lower term after a higher one. Attach of each leadership's owner must
// give the leadership's term.
func checkElectionTerms(t *testing.T, campaigner *distlock.Client, watchers [2]*distlock.Client, name string, terms int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	octx, stop := context.WithCancel(ctx)
	defer stop()
	var stream, polled observed
	ch, err := watchers[0].Observe(octx, name)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for st := range ch {
			if st.Elected() {
				stream.add(st.Term)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for octx.Err() == nil {
			l, err := watchers[1].Leader(octx, name)
			if err == nil {
				polled.add(l.Term)
			} else if !errors.Is(err, distlock.ErrNoLeader) && octx.Err() == nil {
				t.Errorf("Leader: %v", err)
				return
			}
		}
	}()
	var granted []uint64
	for k := range terms {
		l, err := campaigner.Campaign(ctx, name, fmt.Sprintf("leader-%d", k), distlock.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		granted = append(granted, l.Term())
		a, err := campaigner.Attach(ctx, name, l.Lease().Owner(), distlock.WithTTL(10*time.Second), distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		if a.Token() != l.Term() {
			t.Errorf("term %d: Attach gave the token %d", l.Term(), a.Token())
		}
		deadline := time.Now().Add(20 * time.Second)
		for !stream.saw(l.Term()) || !polled.saw(l.Term()) {
			if time.Now().After(deadline) {
				t.Fatalf("term %d: the observers never reported it (stream %v, Leader %v)", l.Term(), stream.all(), polled.all())
			}
			time.Sleep(time.Millisecond)
		}
		if err := l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	for _, o := range []struct {
		what  string
		terms []uint64
	}{{"Observe", stream.all()}, {"Leader", polled.all()}} {
		for i, term := range o.terms {
			if !slices.Contains(granted, term) {
				t.Errorf("%s reported the term %d, which no leader had (the leaders' terms: %v)", o.what, term, granted)
			}
			if i > 0 && term < o.terms[i-1] {
				t.Errorf("%s reported the term %d after %d: terms went down", o.what, term, o.terms[i-1])
			}
		}
	}
}

// seedMemory gives each embedded node a high-water of its own (delta[i]
// µs ahead of now), as nodes whose clocks disagree would have: acquire,
// raise, release.
func seedMemory(t *testing.T, nodes []*memNode, name string, delta []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for i, n := range nodes {
		if delta[i] == 0 {
			continue
		}
		if g, err := n.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "seed", Attempt: "seed", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		if ok, err := n.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "seed", Token: uint64(time.Now().Add(delta[i]).UnixMicro())}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if _, err := n.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "seed"}); err != nil {
			t.Fatal(err)
		}
	}
}

// embeddedQuorum composes nodes (kept open: several quorums share them, as
// processes share servers) into a quorum, through wrap when not nil.
func embeddedQuorum(t *testing.T, nodes []*memNode, wrap func([]engine.Engine) []engine.Engine) *quorum.Engine {
	t.Helper()
	engines := make([]engine.Engine, len(nodes))
	for i, n := range nodes {
		engines[i] = struct {
			*memNode
			noClose
		}{n, noClose{}}
	}
	if wrap != nil {
		engines = wrap(engines)
	}
	q, err := quorum.New(engines, quorum.WithNodeTimeout(termNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// TestElectionTermsAreSettledEmbedded: on quorums of 3 and 5 embedded
// nodes whose high-waters disagree (the slow last node's far ahead, as a
// node with a clock ahead), observers report only the leaders' terms, and
// never a lower one after a higher one, while a late node's own token is
// on it during phase 2. Before the fix they reported the late node's
// token (the largest on a tie), then the leader's lower one; and Attach
// could give that token too.
func TestElectionTermsAreSettledEmbedded(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			nodes := newMemNodes(t, n)
			delta := make([]time.Duration, n)
			for i := range nodes {
				delta[i] = time.Duration(i) * time.Second
			}
			delta[n-1] = time.Hour
			const name = "terms"
			seedMemory(t, nodes, name, delta)
			campaigner := distlock.New(embeddedQuorum(t, nodes, slowTermNodes))
			defer campaigner.Close()
			var watchers [2]*distlock.Client
			for i := range watchers {
				watchers[i] = distlock.New(embeddedQuorum(t, nodes, nil))
				defer watchers[i].Close()
			}
			checkElectionTerms(t, campaigner, watchers, name, 4)
		})
	}
}

// TestElectionTermsAreSettledRedis: the same on three real redis-servers,
// the last one's fencing high-water seeded an hour ahead of the others'
// clocks (its :fence key), the second's a minute ahead.
func TestElectionTermsAreSettledRedis(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	const name = "terms"
	ctx := context.Background()
	for i, ahead := range []time.Duration{0, time.Minute, time.Hour} {
		if ahead == 0 {
			continue
		}
		if err := srvs[i].Client().Set(ctx, lockKey(name)+":fence", time.Now().Add(ahead).UnixMicro(), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	campaigner := distlock.New(wrappedQuorum(t, srvs, func(i int, e engine.Engine) engine.Engine {
		return slowTermNode(e, i == len(srvs)-1)
	}, quorum.WithNodeTimeout(termNodeTimeout)))
	defer campaigner.Close()
	var watchers [2]*distlock.Client
	for i := range watchers {
		watchers[i] = distlock.New(newQuorum(t, srvs, quorum.WithNodeTimeout(termNodeTimeout)))
		defer watchers[i].Close()
	}
	checkElectionTerms(t, campaigner, watchers, name, 4)
}
