package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
)

// gatedNode is an embedded node whose acquires, fence raises, releases
// and extensions can each be held back until a gate opens (a nil gate lets
// the call through at once), as a paused node or a slow link would.
type gatedNode struct {
	*memory.Engine
	acquire, raise, extend, release <-chan struct{}
	extended                        chan<- struct{} // closed after the first extension, if set
}

// Close leaves the node open: several quorums share it.
func (n *gatedNode) Close() error { return nil }

func waitGate(ctx context.Context, gate <-chan struct{}) error {
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *gatedNode) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := waitGate(ctx, n.acquire); err != nil {
		return engine.Grant{}, err
	}
	return n.Engine.Acquire(ctx, r)
}

func (n *gatedNode) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	if err := waitGate(ctx, n.raise); err != nil {
		return false, err
	}
	return n.Engine.RaiseFence(ctx, r)
}

func (n *gatedNode) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := waitGate(ctx, n.release); err != nil {
		return engine.ReleaseResult{}, err
	}
	return n.Engine.Release(ctx, r)
}

func (n *gatedNode) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := waitGate(ctx, n.release); err != nil {
		return engine.ReleaseResult{}, err
	}
	return n.Engine.ReleaseOnce(ctx, r, id)
}

func (n *gatedNode) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := waitGate(ctx, n.extend); err != nil {
		return nil, err
	}
	res, err := n.Engine.Extend(ctx, rs)
	if n.extended != nil {
		close(n.extended)
		n.extended = nil
	}
	return res, err
}

// TestAttachTakesMajorityToken: a node whose grant answered after the
// quorum decided keeps the token it minted (higher: minted later) until
// its alignment to the lease's token lands. An Attach (an extension) whose
// first answers are that node's and one holding the lease's token must not
// take the straggler's: it waits for a token a majority reports.
//
// It failed before the fix (the extension returned on the first majority
// of extended answers, and their tie went to the higher token): "attached
// token 1795612984459613, want 1795612984459446" in the conformance suite.
func TestAttachTakesMajorityToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mems := threeMems(t)
	// The holder's quorum: node 2's grant and its alignment wait.
	lateGrant, lateAlign := make(chan struct{}), make(chan struct{})
	holderQ, err := quorum.New([]engine.Engine{
		&gatedNode{Engine: mems[0]},
		&gatedNode{Engine: mems[1]},
		&gatedNode{Engine: mems[2], acquire: lateGrant, raise: lateAlign},
	}, quorum.WithNodeTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	holder := distlock.New(holderQ)
	defer holder.Close()
	defer close(lateAlign)
	l, err := holder.Acquire(ctx, "attach", distlock.WithAutoRenew(false), distlock.WithTTL(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Node 2 runs the grant late: after the clock passed the token the
	// quorum proposed (the lease's, which nodes 0 and 1 minted), so it
	// mints from its own clock, as a node that runs a request late does.
	if !eventually(10*time.Second, func() bool { return uint64(time.Now().UnixMicro()) > l.Token() }) {
		t.Fatal("the clock never passed the lease's token")
	}
	close(lateGrant)
	var straggler uint64
	if !eventually(10*time.Second, func() bool {
		info, err := mems[2].Inspect(ctx, "attach")
		straggler = info.Token
		return err == nil && info.Held
	}) {
		t.Fatal("the late grant never landed on node 2")
	}
	if straggler == l.Token() {
		t.Fatalf("node 2 minted the lease's token %d itself: the case cannot arise", l.Token())
	}

	// The attaching quorum: node 1, which holds the lease's token, answers
	// the extension after node 2 did and after the Attach returned (or,
	// should the Attach wait for it, a second later).
	attached, node2Extended := make(chan struct{}), make(chan struct{})
	node1 := make(chan struct{})
	go func() {
		<-node2Extended
		select {
		case <-attached:
		case <-time.After(time.Second):
		}
		close(node1)
	}()
	attachQ, err := quorum.New([]engine.Engine{
		&gatedNode{Engine: mems[0]},
		&gatedNode{Engine: mems[1], extend: node1},
		&gatedNode{Engine: mems[2], extended: node2Extended},
	}, quorum.WithNodeTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(attachQ)
	defer c.Close()
	r, err := c.Attach(ctx, "attach", l.Owner(), distlock.WithAutoRenew(false), distlock.WithTTL(20*time.Second))
	close(attached)
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	if r.Token() != l.Token() {
		t.Fatalf("attached token %d, want the lease's %d (node 2's own: %d)", r.Token(), l.Token(), straggler)
	}
}
