package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/server/api"
)

// TestWaitAnswerAgesHolderTTL: an acquire that waited and gave up reports
// the holder's time left as of its answer, not as of its first attempt (a
// waiter asleep in the queue asks once): holder_ttl_ms is at most what the
// engine shows right after the answer, plus the time since the wait ended. It
// was the first attempt's figure, a whole wait too late (an outside
// tester's finding).
func TestWaitAnswerAgesHolderTTL(t *testing.T) {
	s := start(t, nil)
	want(t, "the holder", call(t, "POST", lockURL(s, "aged", "acquire"), "", map[string]any{"ttl_ms": 60000}), 200, "")
	// The answer is made once the wait's 1.5 s ended, so no earlier than
	// that after the request was sent.
	answered := time.Now().Add(1500 * time.Millisecond)
	r := call(t, "POST", lockURL(s, "aged", "acquire"), "", map[string]any{"wait_ms": 1500})
	want(t, "the waiter that gives up", r, 409, api.CodeLocked)
	info, err := s.eng.Inspect(context.Background(), "aged")
	if err != nil || !info.Held {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	between := time.Since(answered)
	detail, _ := r.json(t)["error"].(map[string]any)
	reported, ok := detail["holder_ttl_ms"].(float64)
	if !ok {
		t.Fatalf("no holder_ttl_ms in %s", r.body)
	}
	if most := (info.TTL + between).Milliseconds() + 1; int64(reported) > most {
		t.Fatalf("holder_ttl_ms %v after a %v wait; the engine showed %v left right after (%v later): want at most %d",
			reported, detail["waited_ms"], info.TTL, between, most)
	}
}
