package etcdfence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/etcd/etcdfence"
)

func client(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{os.Getenv("ETCD_ENDPOINT")}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestRule: the first write, a higher token and a tie from the same holder
// are accepted; a lower token and a tie from another holder are refused
// with a *StaleError and change nothing; bad input is refused unsent.
func TestRule(t *testing.T) {
	ctx := context.Background()
	cli := client(t)
	g := etcdfence.New(cli)
	key := fmt.Sprintf("test/rule/%x", rand.Uint64())
	steps := []struct {
		value  string
		token  uint64
		holder string
		ok     bool
	}{
		{"a1", 100, "A", true},
		{"a2", 100, "A", true},  // tie, same holder
		{"b1", 100, "B", false}, // tie, other holder
		{"c1", 99, "C", false},  // lower
		{"d1", 1000, "D", true}, // higher (and longer in digits)
		{"a3", 100, "A", false},
	}
	want := ""
	for _, s := range steps {
		err := g.Put(ctx, key, s.value, s.token, s.holder)
		var stale *etcdfence.StaleError
		switch {
		case s.ok && err != nil:
			t.Fatalf("%s: %v, want accepted", s.value, err)
		case !s.ok && (!errors.As(err, &stale) || !errors.Is(err, etcdfence.ErrStale)):
			t.Fatalf("%s: %v, want a *StaleError", s.value, err)
		case s.ok:
			want = s.value
		}
		resp, err := cli.Get(ctx, key)
		if err != nil || string(resp.Kvs[0].Value) != want {
			t.Fatalf("after %s: %v %v, want %q", s.value, resp, err, want)
		}
	}
	if h, err := g.Highest(ctx, etcdfence.FenceKeyFor(key)); err != nil || h != 1000 {
		t.Fatalf("Highest = %d, %v", h, err)
	}
	for _, bad := range []error{
		g.Put(ctx, "", "x", 1, "A"), g.Put(ctx, key, "x", 0, "A"), g.Put(ctx, key, "x", 5000, ""),
	} {
		if !errors.Is(bad, etcdfence.ErrInvalidArgument) {
			t.Fatalf("bad input: %v", bad)
		}
	}
}

// TestFenceKeyIsNoResource: a resource's fence key cannot be written as
// another resource's data (it ends in /.fence): the write is refused with
// ErrInvalidArgument, the mark keeps its token, and a stale write is still
// refused. Before, the write replaced the mark and a token-2 write after
// token 100 was accepted; a prefix, range or from-key delete, or a delete
// nested in an OpTxn, erased the mark unseen and let it through.
func TestFenceKeyIsNoResource(t *testing.T) {
	ctx := context.Background()
	cli := client(t)
	g := etcdfence.New(cli)
	key := fmt.Sprintf("test/collide/%x", rand.Uint64())
	if err := g.Put(ctx, key, "v100", 100, "A"); err != nil {
		t.Fatal(err)
	}
	if err := g.Put(ctx, etcdfence.FenceKeyFor(key), "junk", 5, "B"); !errors.Is(err, etcdfence.ErrInvalidArgument) {
		t.Fatalf("a write of %s as data: %v, want ErrInvalidArgument", etcdfence.FenceKeyFor(key), err)
	}
	// Ops that would erase the mark: a delete of it, a delete of a range
	// of keys that holds it (a prefix, a range, from a key), the same
	// inside a nested transaction, in either branch.
	nested := func(ops ...clientv3.Op) clientv3.Op { return clientv3.OpTxn(nil, ops, nil) }
	for what, op := range map[string]clientv3.Op{
		"a delete of the mark":            clientv3.OpDelete(etcdfence.FenceKeyFor(key)),
		"a prefix delete":                 clientv3.OpDelete(key, clientv3.WithPrefix()),
		"a range delete":                  clientv3.OpDelete("test/collide/", clientv3.WithRange("test/collide0")),
		"a delete from a key":             clientv3.OpDelete("test/collide/", clientv3.WithFromKey()),
		"a nested delete of the mark":     nested(clientv3.OpGet(key), clientv3.OpDelete(etcdfence.FenceKeyFor(key))),
		"a nested put of the mark":        clientv3.OpTxn(nil, nil, []clientv3.Op{clientv3.OpPut(etcdfence.FenceKeyFor(key), "junk")}),
		"a doubly nested prefix delete":   nested(nested(clientv3.OpDelete(key, clientv3.WithPrefix()))),
		"the guard's own prefix, deleted": clientv3.OpDelete("other", clientv3.WithPrefix()),
	} {
		if _, err := g.Txn(ctx, "other/.fence", 5, "B", op); !errors.Is(err, etcdfence.ErrInvalidArgument) {
			t.Fatalf("%s in a fenced transaction: %v, want ErrInvalidArgument", what, err)
		}
	}
	// Reads of ranges, and nested transactions that write data only, pass.
	if _, err := g.Txn(ctx, "other/.fence", 5, "B", clientv3.OpGet(key, clientv3.WithPrefix()),
		nested(clientv3.OpPut("other/data", "v"), clientv3.OpDelete("other/gone"))); err != nil {
		t.Fatalf("a range read and a nested data write: %v", err)
	}
	if h, err := g.Highest(ctx, etcdfence.FenceKeyFor(key)); err != nil || h != 100 {
		t.Fatalf("Highest after the refusals: %d %v, want 100", h, err)
	}
	if err := g.Put(ctx, key, "v2", 2, "C"); !errors.Is(err, etcdfence.ErrStale) {
		t.Fatalf("a token-2 write after token 100: %v, want ErrStale", err)
	}
}

// TestTokenAboveMax: a token above engine.MaxToken (2^53-1), which no grant
// carries, is refused with ErrInvalidArgument by Put and Txn and sends
// nothing: the mark and the data keep their values, a resource without a
// mark gets none, and the resource's next holder is accepted. Before, the
// mark was raised to it and every real holder was refused from then on.
// 2^53-1 itself is a token.
func TestTokenAboveMax(t *testing.T) {
	ctx := context.Background()
	cli := client(t)
	g := etcdfence.New(cli)
	key := fmt.Sprintf("test/max/%x", rand.Uint64())
	fresh := key + "-fresh"
	if err := g.Put(ctx, key, "v5", 5, "A"); err != nil {
		t.Fatal(err)
	}
	for _, token := range []uint64{engine.MaxToken + 1, 1 << 63, math.MaxUint64} {
		if err := g.Put(ctx, key, "huge", token, "typo"); !errors.Is(err, etcdfence.ErrInvalidArgument) {
			t.Fatalf("Put with token %d: %v, want ErrInvalidArgument", token, err)
		}
		if _, err := g.Txn(ctx, etcdfence.FenceKeyFor(fresh), token, "typo", clientv3.OpPut(fresh, "huge")); !errors.Is(err, etcdfence.ErrInvalidArgument) {
			t.Fatalf("Txn with token %d: %v, want ErrInvalidArgument", token, err)
		}
	}
	if h, err := g.Highest(ctx, etcdfence.FenceKeyFor(key)); err != nil || h != 5 {
		t.Fatalf("Highest after the refusals: %d %v, want 5", h, err)
	}
	for k, want := range map[string]string{key: "v5", fresh: "", etcdfence.FenceKeyFor(fresh): ""} {
		resp, err := cli.Get(ctx, k)
		got := ""
		if err == nil && len(resp.Kvs) > 0 {
			got = string(resp.Kvs[0].Value)
		}
		if err != nil || got != want {
			t.Fatalf("%s after the refusals: %q %v, want %q", k, got, err, want)
		}
	}
	if err := g.Put(ctx, key, "v6", 6, "B"); err != nil {
		t.Fatalf("the next holder after the refusals: %v", err)
	}
	if err := g.Put(ctx, key, "max", engine.MaxToken, "C"); err != nil {
		t.Fatalf("token 2^53-1: %v", err)
	}
}

// TestConcurrentWriters: writers with increasing tokens race; the stored
// value is always the highest accepted token's, never overwritten by a
// lower one.
func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	g := etcdfence.New(client(t))
	key := fmt.Sprintf("test/race/%x", rand.Uint64())
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[uint64]bool{}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				token := uint64(i*8 + w + 1)
				if err := g.Put(ctx, key, fmt.Sprint(token), token, fmt.Sprint("w", w)); err == nil {
					mu.Lock()
					accepted[token] = true
					mu.Unlock()
				} else if !errors.Is(err, etcdfence.ErrStale) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var max uint64
	for tok := range accepted {
		max = builtinMax(max, tok)
	}
	resp, err := client(t).Get(ctx, key)
	if err != nil || string(resp.Kvs[0].Value) != fmt.Sprint(max) {
		t.Fatalf("stored %v (%v), want the highest accepted %d", resp.Kvs, err, max)
	}
}

func builtinMax(a, b uint64) uint64 { return max(a, b) }
