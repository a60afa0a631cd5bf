package etcd

import "testing"

// TestHeadsMissedWakeUp: a waiter's place recorded from a state read at one
// revision, after the watch delivered a deletion at a later one, is judged
// as that deletion would have judged it: a waiter at the head (or that may
// be) whose lock was deleted since is reported as missed (the release's
// wake-up was judged before the record existed: it must look again rather
// than sleep until its heartbeat), and a waiter whose predecessor's key
// was deleted since may head the queue. Seen failing with set ignoring
// the deletions seen (the hand-off then waited for the waiter's
// heartbeat, a second later).
func TestHeadsMissedWakeUp(t *testing.T) {
	var h heads
	if h.set("a", "w1", "", 5) {
		t.Fatal("missed reported with no deletion seen")
	}
	h.sawDelete("a", lockSuffix, 7)
	if !h.set("a", "w1", "", 6) {
		t.Fatal("the lock deleted at revision 7, a head's place read at 6: not reported")
	}
	if h.set("a", "w1", "", 7) || h.set("b", "w3", "", 1) || h.set("a", "w2", "q/w1", 6) {
		t.Fatal("missed reported for a place read at the deletion, on another name, or behind a waiter still there")
	}
	h.sawDelete("a", "q/w1", 8)
	if h.set("a", "w2", "q/w1", 7) || !h.has("a", "w2") {
		t.Fatal("the key before the waiter deleted after its read: the waiter was not taken as maybe heading the queue")
	}
	if !h.set("a", "w2", "q/w1", 6) {
		t.Fatal("the lock and the key before the waiter deleted after its read: not reported")
	}
}
