package redis

// TestKeysLayout: the keys of one lock, built in one allocation, are the
// names every script and reader expects.

import "testing"

func TestKeysLayout(t *testing.T) {
	e := &Engine{prefix: "distlock:"}
	k := e.keys("a/b")
	want := []string{"distlock:{a/b}", "distlock:{a/b}:q", "distlock:{a/b}:qd", "distlock:{a/b}:qs", "distlock:{a/b}:fence"}
	for i := range want {
		if k[i] != want[i] {
			t.Fatalf("%d: %q want %q", i, k[i], want[i])
		}
	}
	if e.queueKey("a/b") != k[1] || e.lockKey("a/b") != k[0] || e.fenceKey("a/b") != k[4] {
		t.Fatal("keys and the single-key helpers disagree")
	}
}
