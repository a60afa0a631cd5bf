package redis

import "testing"

// TestSharedKeysLayout: the keys of a shared lock, built in one
// allocation, are the names its scripts expect, and share the mutex's and
// the high-water's.
func TestSharedKeysLayout(t *testing.T) {
	e := &Engine{prefix: "distlock:"}
	k := e.sharedKeys("a/b")
	want := []string{"distlock:{a/b}", "distlock:{a/b}:s", "distlock:{a/b}:sh", "distlock:{a/b}:sq",
		"distlock:{a/b}:sqd", "distlock:{a/b}:sqs", "distlock:{a/b}:fence"}
	if len(k) != len(want) {
		t.Fatalf("%q", k)
	}
	for i := range want {
		if k[i] != want[i] {
			t.Fatalf("%d: %q want %q", i, k[i], want[i])
		}
	}
	if k[0] != e.lockKey("a/b") || k[0] != e.channel("a/b") || k[6] != e.fenceKey("a/b") {
		t.Fatal("the shared lock's keys and the mutex's disagree")
	}
}
