package enginetest

import (
	"strings"
	"testing"
	"time"
)

// TestSplitVoteJudged: two tries on a free name that overlap and are both
// refused break the specification of a single lock authority (one of them
// must win), and are a split vote, not a violation, on an engine that
// decides grants by a vote among nodes (Harness.Votes). A refused try with
// no other attempt in flight is a violation either way.
func TestSplitVoteJudged(t *testing.T) {
	ms := time.Millisecond
	try := func(client int, inv, resp time.Duration) *event {
		return &event{Client: client, Op: op{Kind: opTry, TTL: 450 * ms}, Inv: inv, Resp: resp, Class: classMutex, Weight: 1, Out: outLocked}
	}
	overlapping := &history{Names: []string{"n0"}, Events: []*event{try(0, 20*ms, 38*ms), try(1, 21*ms, 32*ms)}}
	alone := &history{Names: []string{"n0"}, Events: []*event{try(0, 20*ms, 38*ms)}}
	fit := func(d time.Duration) time.Duration { return d }
	for _, tc := range []struct {
		what  string
		h     *history
		votes bool
		want  bool // a "refused while free" violation
	}{
		{"overlapping, one authority", overlapping, false, true},
		{"overlapping, votes", overlapping, true, false},
		{"alone, votes", alone, true, true},
	} {
		bad := judge(tc.h, timing{fit: fit, slack: 150 * ms, votes: tc.votes})
		got := strings.Contains(strings.Join(bad, "\n"), "refused while free")
		if got != tc.want {
			t.Errorf("%s: violations %q, want a refusal while free: %v", tc.what, bad, tc.want)
		}
	}
}
