package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestCheckerCatchesScriptMutant: the randomized checker catches the
// engine with its acquire script broken inside Redis: the check that
// refuses a mutex while live holders of a shared lock of the name exist is
// taken out of the Lua text (issue 23's cross-kind grant, put back where
// it was). The Clients' go-redis clients send the mutant instead of the
// script (a hook rewrites EVAL's text and EVALSHA's digest; the engine's
// own digest, shared by every engine of the process, is left alone), on a
// redis-server of the test's own.
func TestCheckerCatchesScriptMutant(t *testing.T) {
	srv := redistest.Start(t)
	orig := redisengine.AcquireSource()
	mut := strings.Replace(orig, "return redis.error_reply('DISTLOCK kind ' .. k)", "k = nil -- mutant: no kind check", 1)
	if mut == orig {
		t.Fatal("the acquire script no longer has the kind check this mutant takes out")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := srv.Client()
	t.Cleanup(func() { _ = admin.Close() })
	origSHA, err := admin.ScriptLoad(ctx, orig).Result()
	if err != nil {
		t.Fatal(err)
	}
	mutSHA, err := admin.ScriptLoad(ctx, mut).Result()
	if err != nil {
		t.Fatal(err)
	}
	swap := scriptSwap{origSHA: mutSHA, orig: mut}
	h := harness(func() goredis.UniversalClient {
		c := srv.Client()
		c.AddHook(swap)
		return c
	}, srv.Del)
	enginetest.CheckCatches(t, h, 20*time.Second, []uint64{674156652518316756}, "exclusion:", "kinds:", "differential:")
}

// scriptSwap is a go-redis hook that sends, for EVAL and EVALSHA of a
// script (its text, its digest) in the map, the one it maps to.
type scriptSwap map[string]string

func (s scriptSwap) swap(cmd goredis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	if name, _ := args[0].(string); !strings.EqualFold(name, "eval") && !strings.EqualFold(name, "evalsha") {
		return
	}
	if from, ok := args[1].(string); ok {
		if to, ok := s[from]; ok {
			args[1] = to
		}
	}
}

func (s scriptSwap) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (s scriptSwap) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		s.swap(cmd)
		return next(ctx, cmd)
	}
}

func (s scriptSwap) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		for _, cmd := range cmds {
			s.swap(cmd)
		}
		return next(ctx, cmds)
	}
}
