package distlock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// scriptedTerms is an engine whose Inspect reports an elected leader with
// the terms of script, one per call (then the last one), each with a short
// ttl so that the observer reads again soon: a read that straddles a
// change, as a quorum's may, can report a term below one reported before.
type scriptedTerms struct {
	*memory.Engine
	mu     sync.Mutex
	script []uint64
}

func (s *scriptedTerms) Inspect(_ context.Context, name string) (engine.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	term := s.script[0]
	if len(s.script) > 1 {
		s.script = s.script[1:]
	}
	return engine.Info{Name: name, Held: true, Owner: "o", Count: 1, Metadata: "v", Token: term, TTL: 50 * time.Millisecond}, nil
}

// TestObserveTermsNeverGoDown: an Observe stream never carries a term
// below one it carried before; the lower read is skipped and the observer
// reads again. Before, it sent 5, 9, 7, 11.
func TestObserveTermsNeverGoDown(t *testing.T) {
	mem := memory.New()
	defer mem.Close()
	c := distlock.New(&scriptedTerms{Engine: mem, script: []uint64{5, 9, 7, 11}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := c.Observe(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for st := range ch {
		got = append(got, st.Term)
		if st.Term == 11 {
			break
		}
	}
	// The channel coalesces (a slow reader may miss 9), but never goes
	// down: 7 is never sent.
	if !slices.IsSorted(got) || slices.Contains(got, 7) {
		t.Fatalf("observed terms %v, want 5, 9, 11 (9 may be skipped), never 7", got)
	}
}
