package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/memory"
)

// TestUndoneHeldOpenGrantLeavesNoWaiter: a client with its own owner and
// attempt waits held open (wait_ms) and is granted when the holder
// releases; it takes the grant back with an undo (its answer came too
// late for it). The grant had taken the server's queue entry for the wait,
// and the undo puts it back in its place; the wait is over, so the server
// leaves the queue again after the undo: the name is free with nobody
// waiting. Before, the entry stayed at the head, dead, until its heartbeat
// deadline, and a release woke it instead of the waiters behind it. A
// mutex and a semaphore.
func TestUndoneHeldOpenGrantLeavesNoWaiter(t *testing.T) {
	for _, kind := range []map[string]any{{"kind": "mutex"}, {"kind": "semaphore", "limit": 1}} {
		t.Run(kind["kind"].(string), func(t *testing.T) {
			mem := memory.New()
			t.Cleanup(func() { _ = mem.Close() })
			s := start(t, mem)
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			body := func(fields map[string]any) map[string]any {
				for k, v := range kind {
					fields[k] = v
				}
				return fields
			}
			mustAcquire(t, s, "q", body(map[string]any{"owner": "h", "ttl_ms": 60000}))
			granted := make(chan int, 1)
			go func() {
				data, _ := json.Marshal(body(map[string]any{"owner": "w", "attempt": "w1", "ttl_ms": 60000, "wait_ms": 50000}))
				status := 0
				req, err := http.NewRequestWithContext(ctx, "POST", lockURL(s, "q", "acquire"), strings.NewReader(string(data)))
				if err == nil {
					var resp *http.Response
					if resp, err = httpClient.Do(req); err == nil {
						status = resp.StatusCode
						_ = resp.Body.Close()
					}
				}
				granted <- status
			}()
			waitFor(t, patience, "the held-open acquire to queue", func() bool { return waiters(t, mem, "q") == 1 })
			release := func(fields map[string]any) map[string]any {
				if k, ok := kind["kind"]; ok {
					fields["kind"] = k
				}
				return fields
			}
			want(t, "the holder's release", call(t, "POST", lockURL(s, "q", "release"), "", release(map[string]any{"owner": "h"})), 200, "")
			if status := <-granted; status != http.StatusOK {
				t.Fatalf("the held-open acquire: HTTP %d, want 200 (granted)", status)
			}
			want(t, "the undo", call(t, "POST", lockURL(s, "q", "release"), "", release(map[string]any{"owner": "w", "undo": true})), 200, "")
			info, err := mem.Inspect(ctx, "q")
			if err != nil || info.Held || info.Waiters != 0 {
				t.Fatalf("after the undo: %+v, %v; want free with nobody waiting", info, err)
			}
		})
	}
}
