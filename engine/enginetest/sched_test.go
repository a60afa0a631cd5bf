package enginetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// verdictTB records what Bounded decided; like testing.T's, its Skipf and
// Fatalf end the call (judge recovers).
type verdictTB struct{ skipped, failed bool }

type stop struct{}

func (v *verdictTB) Helper()               {}
func (v *verdictTB) Skipf(string, ...any)  { v.skipped = true; panic(stop{}) }
func (v *verdictTB) Fatalf(string, ...any) { v.failed = true; panic(stop{}) }
func (v *verdictTB) String() string        { return fmt.Sprintf("skipped %v, failed %v", v.skipped, v.failed) }

// judge runs Bounded on v.
func (v *verdictTB) judge(got, allowed, machine, limit time.Duration) {
	defer func() {
		if r := recover(); r != nil && r != (stop{}) {
			panic(r)
		}
	}()
	Bounded(v, "x", got, allowed, machine, limit)
}

// TestBounded: a time within its allowance passes; beyond it, the test
// fails on a machine that kept up (measured delay below the limit) and
// skips on one too slow to judge.
func TestBounded(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		what                         string
		got, allowed, machine, limit time.Duration
		skipped, failed              bool
	}{
		{"within", 30 * ms, 50 * ms, 5 * ms, 300 * ms, false, false},
		{"late on a machine that kept up", 400 * ms, 50 * ms, 5 * ms, 300 * ms, false, true},
		{"late on a machine too slow", 400 * ms, 50 * ms, 300 * ms, 300 * ms, true, false},
		{"within on a machine too slow", 30 * ms, 50 * ms, time.Second, 300 * ms, false, false},
	} {
		var v verdictTB
		v.judge(tc.got, tc.allowed, tc.machine, tc.limit)
		if v.skipped != tc.skipped || v.failed != tc.failed {
			t.Errorf("%s: %v, want skipped %v, failed %v", tc.what, &v, tc.skipped, tc.failed)
		}
	}
}

// TestProbeMeasuresDelay: a probe's delay is never negative and its slack
// never below the base.
func TestProbeMeasuresDelay(t *testing.T) {
	p := StartProbe(t)
	time.Sleep(20 * time.Millisecond)
	if d := p.Delay(); d < 0 {
		t.Fatalf("delay %v", d)
	}
	if s := p.Slack(); s < schedBase {
		t.Fatalf("slack %v below the base %v", s, schedBase)
	}
}

// TestOutOfOrder: a call whose entry the queue confirmed before another's
// first attempt was sent must be granted first; calls whose arrivals
// overlap are not ordered; dropped entries are left out, and so is a
// grant that came after the head's reservation may have lapsed. (The suite's
// control, the queue hidden from the Clients, shows it on a real engine.)
func TestOutOfOrder(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	a := arrival{sent: at(0), answered: at(2), waiter: "a", grant: 1}
	b := arrival{sent: at(5), answered: at(7), waiter: "b", grant: 0} // arrived after a, granted first
	c := arrival{sent: at(1), answered: at(6), waiter: "c", grant: 2} // overlaps a and b
	if bad, _ := outOfOrder([]arrival{a, b, c}, nil, nil); bad != 1 {
		t.Fatalf("a granted after b, which arrived later: %d out of order, want 1", bad)
	}
	if bad, _ := outOfOrder([]arrival{a, b, c}, map[string]bool{"a": true}, nil); bad != 0 {
		t.Fatalf("with a dropped: %d out of order, want 0", bad)
	}
	// b's grant came a reservation's length after the last release: the
	// head's reservation may have lapsed, so b may go first; within it,
	// only the head could have the lock.
	b.granted = at(400)
	if bad, _ := outOfOrder([]arrival{a, b, c}, nil, []time.Time{at(10), at(400 - int(engine.ReserveTTL/time.Millisecond))}); bad != 0 {
		t.Fatalf("b granted after a's reservation lapsed: %d out of order, want 0", bad)
	}
	if bad, _ := outOfOrder([]arrival{a, b, c}, nil, []time.Time{at(10), at(399)}); bad != 1 {
		t.Fatalf("b granted 1ms after the release: %d out of order, want 1", bad)
	}
	// A reservation that may have lapsed while a waited, before b's
	// grant (d's, a reservation's length after its release): the head
	// then dropped may have been a. One before a arrived excuses nothing.
	d := arrival{sent: at(1), answered: at(1), waiter: "d", grant: -1, granted: at(300)} // granted first
	releases := []time.Time{at(10), at(300 - int(engine.ReserveTTL/time.Millisecond)), at(399)}
	if bad, _ := outOfOrder([]arrival{a, b, c, d}, nil, releases); bad != 0 {
		t.Fatalf("b granted after a reservation may have lapsed while a waited: %d out of order, want 0", bad)
	}
	d.granted = at(1)
	if bad, _ := outOfOrder([]arrival{a, b, c, d}, nil, []time.Time{at(1 - int(engine.ReserveTTL/time.Millisecond)), at(399)}); bad != 1 {
		t.Fatalf("the only lapse came before a arrived: %d out of order, want 1", bad)
	}
	a.grant, b.grant = 0, 1
	if bad, _ := outOfOrder([]arrival{a, b, c}, nil, nil); bad != 0 {
		t.Fatalf("in arrival order: %d out of order, want 0", bad)
	}
}

// TestGrantInTime: a grant refused as too late skips the test only when
// the round trip measured used most of the ttl; a refusal well within the
// ttl, or any other error, fails it.
func TestGrantInTime(t *testing.T) {
	ttl := 300 * time.Millisecond
	late := &distlock.BackendError{Op: "acquire", Name: "x", Err: errors.New("grant arrived after its validity was used up")}
	lostExpired := fmt.Errorf("%w: %w", distlock.ErrNotHeld, &distlock.LostError{Name: "x", Cause: distlock.Expired})
	quorumLate := fmt.Errorf("%w: %w", distlock.ErrBackend, quorum.ErrValidityUsedUp)
	for _, tc := range []struct {
		what            string
		err             error
		took            time.Duration
		skipped, failed bool
	}{
		{"granted", nil, time.Second, false, false},
		{"too late after a slow round trip", late, ttl, true, false},
		{"a quorum too late after a slow round trip", quorumLate, ttl, true, false},
		{"too late after a fast round trip", late, ttl / 3, false, true},
		{"an Extend lost as expired after a slow round trip", lostExpired, ttl, true, false},
		{"an Extend lost as expired after a fast round trip", lostExpired, ttl / 3, false, true},
		{"an Extend lost as taken over after a slow round trip", fmt.Errorf("%w: %w", distlock.ErrNotHeld, &distlock.LostError{Name: "x", Cause: distlock.TakenOver}), ttl, false, true},
		{"another backend error after a slow round trip", &distlock.BackendError{Op: "acquire", Name: "x", Err: errors.New("boom")}, ttl, false, true},
	} {
		var v verdictTB
		func() {
			defer func() {
				if r := recover(); r != nil && r != (stop{}) {
					panic(r)
				}
			}()
			grantInTime(&v, "x", tc.err, ttl, time.Now().Add(-tc.took))
		}()
		if v.skipped != tc.skipped || v.failed != tc.failed {
			t.Errorf("%s: %v, want skipped %v, failed %v", tc.what, &v, tc.skipped, tc.failed)
		}
	}
}
