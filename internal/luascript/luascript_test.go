package luascript_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/luascript"
	"github.com/distlock/distlock/internal/redistest"
)

// names records the name of every script command sent (EVAL, EVALSHA,
// SCRIPT), alone or in a pipeline.
type names []string

func (n *names) record(c redis.Cmder) {
	switch c.Name() {
	case "eval", "evalsha", "script":
		*n = append(*n, c.Name())
	}
}

func (n *names) DialHook(next redis.DialHook) redis.DialHook { return next }

func (n *names) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		n.record(cmd)
		return next(ctx, cmd)
	}
}

func (n *names) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			n.record(c)
		}
		return next(ctx, cmds)
	}
}

func (n *names) take() []string {
	out := *n
	*n = nil
	return out
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestScript: a new script has no digest; queued in a pipeline it is sent
// with EVAL (nothing is loaded there); Run loads the digest once (SCRIPT
// LOAD, which the server keeps) and then sends EVALSHA alone; after SCRIPT
// FLUSH, Run answers through EVAL; a script whose load a server refused
// (SCRIPT renamed away, as an ACL without it would) still runs, with EVAL,
// and is not loaded again on the next run.
func TestScript(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := redistest.Start(t, redistest.WithArgs("--rename-command", "SCRIPT", ""))
	plain := redistest.Start(t)
	for _, tc := range []struct {
		name      string
		srv       *redistest.Server
		loads     bool
		firstRun  []string
		secondRun []string
	}{
		{"loads", plain, true, []string{"script", "evalsha"}, []string{"evalsha"}},
		{"SCRIPT refused", srv, false, []string{"script", "eval"}, []string{"eval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.srv.Client()
			var n names
			c.AddHook(&n)
			s := luascript.New("return ARGV[1]")
			if s.Digest() != nil {
				t.Fatalf("a new script has the digest %v", s.Digest())
			}
			var piped *redis.Cmd
			if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				piped = s.EvalSha(ctx, p, nil, "p")
				return nil
			}); err != nil || piped.Val() != "p" {
				t.Fatalf("in a pipeline before a load: %v, %v", piped.Val(), err)
			}
			if got := n.take(); !same(got, []string{"eval"}) {
				t.Fatalf("in a pipeline before a load: sent %q", got)
			}
			for i, want := range [][]string{tc.firstRun, tc.secondRun} {
				if v, err := s.Run(ctx, c, nil, "r").Result(); err != nil || v != "r" {
					t.Fatalf("run %d: %v, %v", i, v, err)
				}
				if got := n.take(); !same(got, want) {
					t.Fatalf("run %d: sent %q, want %q", i, got, want)
				}
			}
			if !tc.loads {
				if s.Digest() != nil {
					t.Fatalf("a refused load left the digest %v", s.Digest())
				}
				return
			}
			d, _ := s.Digest().(string)
			if ok, err := c.ScriptExists(ctx, d).Result(); err != nil || !ok[0] {
				t.Fatalf("digest %q: SCRIPT EXISTS %v, %v", d, ok, err)
			}
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			n.take()
			if v, err := s.Run(ctx, c, nil, "f").Result(); err != nil || v != "f" {
				t.Fatalf("after SCRIPT FLUSH: %v, %v", v, err)
			}
			if got := n.take(); !same(got, []string{"evalsha", "eval"}) {
				t.Fatalf("after SCRIPT FLUSH: sent %q", got)
			}
		})
	}
}
