//go:build !lite

package fence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/internal/redistest"
)

// startRedis starts a real redis-server for t and returns a client for it
// that speaks the given protocol version (2 or 3).
func startRedis(t *testing.T, protocol int, opts ...redistest.Option) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, opts...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: protocol})
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

// testContext returns a context that ends with the test or after a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// wantStale fails t unless err is a *StaleError with the given fields.
func wantStale(t *testing.T, err error, want fence.StaleError) {
	t.Helper()
	var se *fence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want *StaleError %+v", err, want)
	}
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("errors.Is(%v, ErrStale) = false", err)
	}
	if *se != want {
		t.Fatalf("got %+v, want %+v", *se, want)
	}
}

// wantString fails t unless key holds want.
func wantString(t *testing.T, ctx context.Context, c *redis.Client, key, want string) {
	t.Helper()
	got, err := c.Get(ctx, key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	if got != want {
		t.Fatalf("GET %s = %q, want %q", key, got, want)
	}
}

// wantHighest fails t unless the mark at fenceKey is want.
func wantHighest(t *testing.T, ctx context.Context, r *fence.Redis, fenceKey string, want uint64) {
	t.Helper()
	got, err := r.Highest(ctx, fenceKey)
	if err != nil {
		t.Fatalf("Highest(%s): %v", fenceKey, err)
	}
	if got != want {
		t.Fatalf("Highest(%s) = %d, want %d", fenceKey, got, want)
	}
}

func TestRedisSet(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			ctx := testContext(t)
			_, c := startRedis(t, protocol)
			r := fence.NewRedis(c)
			fk := fence.FenceKeyFor("doc")

			wantHighest(t, ctx, r, fk, 0)
			for _, token := range []uint64{3, 4, 10} {
				if err := r.Set(ctx, "doc", "v"+strconv.FormatUint(token, 10), token, "alice"); err != nil {
					t.Fatalf("token %d: %v", token, err)
				}
				wantString(t, ctx, c, "doc", "v"+strconv.FormatUint(token, 10))
				wantHighest(t, ctx, r, fk, token)
			}

			err := r.Set(ctx, "doc", "late", 9, "bob")
			wantStale(t, err, fence.StaleError{Resource: fk, Token: 9, Highest: 10, Holder: "bob"})
			wantString(t, ctx, c, "doc", "v10")
			wantHighest(t, ctx, r, fk, 10)

			// The mark is a hash holding the token and holder.
			mark, err := c.HGetAll(ctx, fk).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(mark) != 2 || mark["token"] != "10" || mark["holder"] != "alice" {
				t.Fatalf("fence key %s = %v", fk, mark)
			}
			if ttl, err := c.TTL(ctx, fk).Result(); err != nil || ttl != -1 {
				t.Fatalf("TTL %s = %v, %v; want no TTL", fk, ttl, err)
			}
			// Each write that ran (three; not the stale one) left a key
			// with its write id, which makes resent copies harmless, for
			// ResendWindow.
			wantWriteIDKeys(t, ctx, c, fk+":write:*", 3)
		})
	}
}

// wantWriteIDKeys fails t unless n keys match pattern, each expiring within
// ResendWindow, and the database holds nothing else of that form.
func wantWriteIDKeys(t *testing.T, ctx context.Context, c *redis.Client, pattern string, n int) {
	t.Helper()
	keys, err := c.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != n {
		t.Fatalf("write id keys %q = %q, want %d", pattern, keys, n)
	}
	for _, k := range keys {
		pttl, err := c.PTTL(ctx, k).Result()
		if err != nil || pttl <= 0 || pttl > fence.ResendWindow {
			t.Fatalf("PTTL %s = %v, %v; want in (0, %v]", k, pttl, err, fence.ResendWindow)
		}
	}
	if all, err := c.Keys(ctx, "*:write:*").Result(); err != nil || len(all) != n {
		t.Fatalf("write id keys %q, %v; want only the %d of %q", all, err, n, pattern)
	}
}

// TestRedisWriteIDKeys: the write id key's name for every form of fence key:
// with a hash tag, without one, and with a '}' but no tag (which cannot be
// wrapped in braces). TestFenceKeyForSlots checks their slots on a Cluster.
func TestRedisWriteIDKeys(t *testing.T) {
	for _, tc := range []struct{ fenceKey, pattern string }{
		{"{acct}:fence", "{acct}:fence:write:*"},
		{"res:fence", "{res:fence}:write:*"},
		{"a}b", "{*}a}b:write:*"},
	} {
		t.Run(tc.fenceKey, func(t *testing.T) {
			ctx := testContext(t)
			_, c := startRedis(t, 3)
			r := fence.NewRedis(c)
			if _, err := r.Exec(ctx, tc.fenceKey, 1, "a", []string{"data"}, "SET", "data", "v"); err != nil {
				t.Fatal(err)
			}
			wantWriteIDKeys(t, ctx, c, tc.pattern, 1)
		})
	}
}

func TestRedisTies(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	fk := fence.FenceKeyFor("k")

	if err := r.Set(ctx, "k", "a1", 5, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "k", "a2", 5, "alice"); err != nil {
		t.Fatalf("tie from the same holder: %v", err)
	}
	wantString(t, ctx, c, "k", "a2")

	err := r.Set(ctx, "k", "b1", 5, "bob")
	wantStale(t, err, fence.StaleError{Resource: fk, Token: 5, Highest: 5, Holder: "bob"})
	wantString(t, ctx, c, "k", "a2")
	if err := r.Set(ctx, "k", "a3", 5, "alice"); err != nil {
		t.Fatalf("alice after bob's rejected tie: %v", err)
	}

	if err := r.Set(ctx, "k", "b2", 6, "bob"); err != nil {
		t.Fatal(err)
	}
	err = r.Set(ctx, "k", "a4", 6, "alice")
	wantStale(t, err, fence.StaleError{Resource: fk, Token: 6, Highest: 6, Holder: "alice"})
	wantString(t, ctx, c, "k", "b2")
}

func TestRedisExecCommands(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	const fk, members, counter = "{acct:1}:fence", "{acct:1}:members", "{acct:1}:count"

	got, err := r.Exec(ctx, fk, 100, "w1", []string{members}, "SADD", members, "x", "y")
	if err != nil || got != int64(2) {
		t.Fatalf("SADD = %#v, %v; want 2", got, err)
	}
	got, err = r.Exec(ctx, fk, 101, "w1", []string{counter}, "INCRBY", counter, 5)
	if err != nil || got != int64(5) {
		t.Fatalf("INCRBY = %#v, %v; want 5", got, err)
	}
	got, err = r.Exec(ctx, fk, 101, "w1", []string{counter}, "INCRBY", counter, 2)
	if err != nil || got != int64(7) {
		t.Fatalf("INCRBY = %#v, %v; want 7", got, err)
	}

	got, err = r.Exec(ctx, fk, 100, "w2", []string{counter}, "INCRBY", counter, 1000)
	if got != nil {
		t.Fatalf("stale INCRBY returned %#v", got)
	}
	wantStale(t, err, fence.StaleError{Resource: fk, Token: 100, Highest: 101, Holder: "w2"})
	_, err = r.Exec(ctx, fk, 99, "w2", []string{members}, "SADD", members, "z")
	wantStale(t, err, fence.StaleError{Resource: fk, Token: 99, Highest: 101, Holder: "w2"})

	if n, err := c.Get(ctx, counter).Int(); err != nil || n != 7 {
		t.Fatalf("counter = %d, %v; want 7", n, err)
	}
	if m, err := c.SMembers(ctx, members).Result(); err != nil || len(m) != 2 {
		t.Fatalf("members = %v, %v; want x y", m, err)
	}
	wantHighest(t, ctx, r, fk, 101)

	// A status reply passes through.
	got, err = r.Exec(ctx, fk, 102, "w3", []string{"{acct:1}:name"}, "SET", "{acct:1}:name", "n")
	if err != nil || got != "OK" {
		t.Fatalf("SET = %#v, %v; want OK", got, err)
	}
}

func TestRedisNilReply(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			ctx := testContext(t)
			_, c := startRedis(t, protocol)
			r := fence.NewRedis(c)
			fk := fence.FenceKeyFor("k")
			got, err := r.Exec(ctx, fk, 1, "a", []string{"k"}, "SET", "k", "v1", "GET")
			if err != nil || got != nil {
				t.Fatalf("SET GET on a missing key = %#v, %v; want nil", got, err)
			}
			got, err = r.Exec(ctx, fk, 2, "a", []string{"k"}, "SET", "k", "v2", "GET")
			if err != nil || got != "v1" {
				t.Fatalf("SET GET = %#v, %v; want v1", got, err)
			}
			got, err = r.Exec(ctx, fk, 3, "a", []string{"k", "missing"}, "MGET", "k", "missing")
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := got.([]any); !ok || len(l) != 2 || l[0] != "v2" || l[1] != nil {
				t.Fatalf("MGET = %#v, want [v2 nil]", got)
			}
		})
	}
}

func TestRedisFailingCommandDoesNotRaise(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	fk := fence.FenceKeyFor("n")
	if err := r.Set(ctx, "n", "not a number", 5, "a"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Exec(ctx, fk, 50, "a", []string{"n"}, "INCRBY", "n", 1)
	if err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("INCRBY on a string = %#v, %v; want the command's error", got, err)
	}
	if !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("error %q does not carry the command's error", err)
	}
	wantHighest(t, ctx, r, fk, 5)
	// Only the first Set ran: the failed command left no write id.
	wantWriteIDKeys(t, ctx, c, fk+":write:*", 1)
	if err := r.Set(ctx, "n", "6", 6, "b"); err != nil {
		t.Fatalf("token 6 after a failed command with 50: %v", err)
	}
}

func TestRedisNoScript(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	// A fresh server has no script cached: the first Exec falls back to EVAL.
	if err := r.Set(ctx, "k", "v1", 1, "a"); err != nil {
		t.Fatalf("first Set: %v", err)
	}
	if err := r.Set(ctx, "k", "v2", 2, "a"); err != nil {
		t.Fatalf("second Set: %v", err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "k", "v3", 3, "a"); err != nil {
		t.Fatalf("Set after SCRIPT FLUSH: %v", err)
	}
	wantString(t, ctx, c, "k", "v3")
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	err := r.Set(ctx, "k", "late", 2, "b")
	wantStale(t, err, fence.StaleError{Resource: fence.FenceKeyFor("k"), Token: 2, Highest: 3, Holder: "b"})
	wantString(t, ctx, c, "k", "v3")
}

// TestRedisLargeTokens catches tokens compared or stored as Lua numbers
// (doubles): tostring() of a microsecond timestamp gives "1.792e+15". The
// largest tokens, up to engine.MaxToken (2^53-1), are compared exactly
// (TestRedisTokenAboveMax: larger ones are refused unsent).
func TestRedisLargeTokens(t *testing.T) {
	cases := []struct{ high, low uint64 }{
		{1792000000000001, 1792000000000000},
		{engine.MaxToken, engine.MaxToken - 1},
		{engine.MaxToken, 1e15},
		{1000, 999},    // longer is larger although "999" > "1000" as text
		{10, 9},        // the same across a length change
		{2000000, 1e6}, // trailing zeros
	}
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	for i, tc := range cases {
		key := fmt.Sprintf("big%d", i)
		fk := fence.FenceKeyFor(key)
		if err := r.Set(ctx, key, "high", tc.high, "a"); err != nil {
			t.Fatalf("%d: %v", tc.high, err)
		}
		err := r.Set(ctx, key, "low", tc.low, "b")
		wantStale(t, err, fence.StaleError{Resource: fk, Token: tc.low, Highest: tc.high, Holder: "b"})
		// A tie from another holder must be seen as a tie, not as "greater".
		err = r.Set(ctx, key, "tie", tc.high, "b")
		wantStale(t, err, fence.StaleError{Resource: fk, Token: tc.high, Highest: tc.high, Holder: "b"})
		wantString(t, ctx, c, key, "high")
		wantHighest(t, ctx, r, fk, tc.high)
		if raw, err := c.HGet(ctx, fk, "token").Result(); err != nil || raw != strconv.FormatUint(tc.high, 10) {
			t.Fatalf("stored token = %q, %v; want %d", raw, err, tc.high)
		}

		// And in the other order both are accepted.
		key2 := key + "-up"
		if err := r.Set(ctx, key2, "low", tc.low, "a"); err != nil {
			t.Fatal(err)
		}
		if err := r.Set(ctx, key2, "high", tc.high, "b"); err != nil {
			t.Fatalf("%d after %d: %v", tc.high, tc.low, err)
		}
		wantHighest(t, ctx, r, fence.FenceKeyFor(key2), tc.high)
	}
}

func TestRedisCorruptMarkFailsClosed(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	fk := fence.FenceKeyFor("k")
	if err := c.HSet(ctx, fk, "token", "1.792e+15", "holder", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, "k", "v", 2000000000000000, "a"); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set over a corrupt mark: got %v, want an error", err)
	}
	if n, _ := c.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("the write ran over a corrupt mark")
	}
}

func TestRedisInvalidArguments(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	cases := []struct {
		name     string
		fenceKey string
		token    uint64
		holder   string
		keys     []string
		args     []any
	}{
		{"empty fence key", "", 1, "a", []string{"k"}, []any{"SET", "k", "v"}},
		{"token 0", "{k}:fence", 0, "a", []string{"k"}, []any{"SET", "k", "v"}},
		{"empty holder", "{k}:fence", 1, "", []string{"k"}, []any{"SET", "k", "v"}},
		{"no command", "{k}:fence", 1, "a", []string{"k"}, nil},
		{"fence key among keys", "{k}:fence", 1, "a", []string{"{k}:fence"}, []any{"DEL", "{k}:fence"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Exec(ctx, tc.fenceKey, tc.token, tc.holder, tc.keys, tc.args...); !errors.Is(err, fence.ErrInvalidArgument) {
				t.Fatalf("got %v, want ErrInvalidArgument", err)
			}
		})
	}
	if err := r.Set(ctx, "", "v", 1, "a"); !errors.Is(err, fence.ErrInvalidArgument) {
		t.Fatalf("Set with an empty key: got %v", err)
	}
	if _, err := r.Highest(ctx, ""); !errors.Is(err, fence.ErrInvalidArgument) {
		t.Fatalf("Highest with an empty key: got %v", err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE = %d, %v after invalid calls; want 0", n, err)
	}
}

// TestRedisConcurrentWriters has many clients append their token to a list
// through Exec; the list is then the order in which Redis accepted writes.
func TestRedisConcurrentWriters(t *testing.T) {
	ctx := testContext(t)
	srv, _ := startRedis(t, 3)
	const fk, logKey = "{res}:fence", "{res}:log"
	const writers, steps = 8, 150
	var accepted, stale sync.Map
	var wg sync.WaitGroup
	for w := range writers {
		c := srv.Client()
		r := fence.NewRedis(c)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			holder := fmt.Sprintf("h%d", w%3)
			for i := range steps {
				token := uint64(1792000000000000 + i*2 + rng.IntN(5))
				entry := strconv.FormatUint(token, 10) + " " + holder
				_, err := r.Exec(ctx, fk, token, holder, []string{logKey}, "RPUSH", logKey, entry)
				var se *fence.StaleError
				switch {
				case err == nil:
					accepted.Store(fmt.Sprint(w, i), entry)
				case errors.As(err, &se):
					if se.Highest < token {
						t.Errorf("stale with highest %d below token %d", se.Highest, token)
					}
					stale.Store(fmt.Sprint(w, i), entry)
				default:
					t.Errorf("Exec: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	c := srv.Client()
	log, err := c.LRange(ctx, logKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	accepted.Range(func(_, _ any) bool { n++; return true })
	if n != len(log) {
		t.Fatalf("%d writes accepted, %d in the log", n, len(log))
	}
	if n < writers*steps/20 {
		t.Fatalf("only %d writes accepted: the test exercises too little", n)
	}
	var prevToken uint64
	var prevHolder string
	for i, e := range log {
		tok, holder, _ := strings.Cut(e, " ")
		token, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if token < prevToken || (token == prevToken && holder != prevHolder) {
			t.Fatalf("log[%d] = %q after %d %s", i, e, prevToken, prevHolder)
		}
		prevToken, prevHolder = token, holder
	}
	wantHighest(t, ctx, fence.NewRedis(c), fk, prevToken)
}

func TestFenceKeyFor(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"doc", "{doc}:fence"},
		{"user:42:balance", "{user:42:balance}:fence"},
		{"user:{42}:balance", "user:{42}:balance:fence"},
		{"{acct}", "{acct}:fence"},
		{"a{b", "{a{b}:fence"}, // "{a{b}" has the tag "a{b"
		{"}{x}", "}{x}:fence"}, // the tag is "x"
	} {
		if got := fence.FenceKeyFor(tc.key); got != tc.want {
			t.Errorf("FenceKeyFor(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	for _, key := range []string{"a}b", "a{}b}", "", "}", "{}", "x}{y"} {
		got := fence.FenceKeyFor(key)
		if got == fence.FenceKeyFor(key+"0") || !strings.HasSuffix(got, key+":fence") || !strings.HasPrefix(got, "{") {
			t.Errorf("FenceKeyFor(%q) = %q", key, got)
		}
		if again := fence.FenceKeyFor(key); again != got {
			t.Errorf("FenceKeyFor(%q) = %q, then %q", key, got, again)
		}
	}
}

// TestFenceKeyForSlots asks a cluster-enabled redis-server for the hash slots
// of keys and their fence keys, and writes through Set, which the server
// refuses with CROSSSLOT if the two are in different slots.
func TestFenceKeyForSlots(t *testing.T) {
	ctx := testContext(t)
	srv, c := startRedis(t, 3, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	waitClusterOK(t, ctx, c)

	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "ab{}:z0"
	keys := []string{"doc", "a}b", "a{}b}", "}", "{}", "x}{y", "user:{42}:balance", "a{b", "}{x}"}
	for range 3000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		keys = append(keys, string(b))
	}
	pipe := c.Pipeline()
	slots := make([][2]*redis.IntCmd, len(keys))
	for i, k := range keys {
		slots[i] = [2]*redis.IntCmd{pipe.ClusterKeySlot(ctx, k), pipe.ClusterKeySlot(ctx, fence.FenceKeyFor(k))}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	distinct := map[int64]bool{}
	for i, k := range keys {
		ks, fs := slots[i][0].Val(), slots[i][1].Val()
		if ks != fs {
			t.Fatalf("key %q is in slot %d, FenceKeyFor(%q) = %q in slot %d", k, ks, k, fence.FenceKeyFor(k), fs)
		}
		distinct[ks] = true
	}
	if len(distinct) < 100 {
		t.Fatalf("only %d distinct slots tested", len(distinct))
	}

	r := fence.NewRedis(c)
	for i, k := range keys[:200] {
		if k == "" {
			continue
		}
		if err := r.Set(ctx, k, "v", uint64(i+1), "a"); err != nil {
			t.Fatalf("Set(%q) on cluster: %v", k, err)
		}
	}
	// A ClusterClient works as the UniversalClient: the script is routed by
	// the fence key, KEYS[1].
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	defer cc.Close()
	rc := fence.NewRedis(cc)
	if err := rc.Set(ctx, "a}b", "cluster", 1000, "a"); err != nil {
		t.Fatalf("Set through a ClusterClient: %v", err)
	}
	wantString(t, ctx, c, "a}b", "cluster")
	err := rc.Set(ctx, "a}b", "late", 999, "b")
	wantStale(t, err, fence.StaleError{Resource: fence.FenceKeyFor("a}b"), Token: 999, Highest: 1000, Holder: "b"})

	// The write id key is declared to the script and is in the fence key's
	// slot for every form of fence key, also one with a '}' and no hash
	// tag; the data key here takes the tag FenceKeyFor finds for it.
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, fk := range []string{"{acct}:fence", "res:fence", "p}q", "x}{y", "}"} {
		data := fence.FenceKeyFor(fk) + ":data"
		if _, err := rc.Exec(ctx, fk, 1, "a", []string{data}, "SET", data, "v"); err != nil {
			t.Fatalf("Exec with fence key %q through a ClusterClient: %v", fk, err)
		}
		ids, err := c.Keys(ctx, "*:write:*").Result()
		if err != nil || len(ids) != 1 {
			t.Fatalf("write id keys after a write for %q: %q, %v; want one", fk, ids, err)
		}
		if a, b := c.ClusterKeySlot(ctx, fk).Val(), c.ClusterKeySlot(ctx, ids[0]).Val(); a != b {
			t.Fatalf("fence key %q in slot %d, write id key %q in slot %d", fk, a, ids[0], b)
		}
		if err := c.Del(ctx, ids[0]).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Keys in different slots are refused by the server, which shows the
	// check above has teeth.
	if _, err := r.Exec(ctx, "{a}:fence", 1, "a", []string{"{b}"}, "SET", "{b}", "v"); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot Exec: got %v, want CROSSSLOT", err)
	}
}

// waitClusterOK waits until the single-node cluster serves its slots.
func waitClusterOK(t *testing.T, ctx context.Context, c *redis.Client) {
	t.Helper()
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster never became ok: %v %q", err, info)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
