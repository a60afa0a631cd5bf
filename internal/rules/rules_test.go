package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// check runs one rule's case: nil wanted when reason is "", else an
// *engine.ArgumentError for arg whose reason is reason.
func check(t *testing.T, name string, err error, arg, reason string) {
	t.Helper()
	if reason == "" {
		if err != nil {
			t.Errorf("%s: got %v, want nil", name, err)
		}
		return
	}
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: got %v (%T), want an *engine.ArgumentError", name, err, err)
	}
	if ae.Arg != arg || ae.Reason != reason {
		t.Errorf("%s: got arg %q reason %q, want %q %q", name, ae.Arg, ae.Reason, arg, reason)
	}
}

func TestText(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		name   string
		rule   func(string) error
		in     string
		arg    string
		reason string
	}{
		{"owner empty", Owner, "", "owner", ""},
		{"owner at the bound", Owner, long(MaxOwnerLen), "owner", ""},
		{"owner too long", Owner, long(MaxOwnerLen + 1), "owner", "longer than 256 bytes"},
		{"owner not UTF-8", Owner, "a\xff", "owner", "not valid UTF-8"},
		{"waiter empty", Waiter, "", "waiter", ""},
		{"waiter too long", Waiter, long(MaxOwnerLen + 1), "waiter", "longer than 256 bytes"},
		{"waiter not UTF-8", Waiter, "\xc0", "waiter", "not valid UTF-8"},
		{"attempt empty", Attempt, "", "attempt", ""},
		{"attempt at the bound", Attempt, long(MaxAttemptLen), "attempt", ""},
		{"attempt too long", Attempt, long(MaxAttemptLen + 1), "attempt", "at most 256 bytes of UTF-8"},
		{"attempt not UTF-8", Attempt, "a\xff", "attempt", "at most 256 bytes of UTF-8"},
		{"metadata at the bound", Metadata, long(MaxMetadataLen), "metadata", ""},
		{"metadata too long", Metadata, long(MaxMetadataLen + 1), "metadata", "longer than 4096 bytes"},
		{"metadata not UTF-8", Metadata, "\xff", "metadata", "not valid UTF-8"},
		{"value", Value, "node-1", "value", ""},
		{"value empty", Value, "", "value", "empty"},
		{"value too long", Value, long(MaxMetadataLen + 1), "value", "longer than 4096 bytes"},
		{"value not UTF-8", Value, "\xff", "value", "not valid UTF-8"},
	} {
		check(t, c.name, c.rule(c.in), c.arg, c.reason)
	}
}

func TestTTL(t *testing.T) {
	for _, c := range []struct {
		ttl    time.Duration
		reason string
	}{
		{MinTTL, ""},
		{MaxTTL, ""},
		{0, "must be positive, got 0s"},
		{-time.Second, "must be positive, got -1s"},
		{MinTTL - time.Millisecond, "49ms is too short to renew; the minimum is 50ms"},
		{MaxTTL + time.Nanosecond, "24h0m0.000000001s is above the maximum of 24h0m0s"},
	} {
		check(t, c.ttl.String(), TTL(c.ttl), "ttl", c.reason)
	}
}

// seconds is an engine that keeps whole seconds (as etcd does); only its
// capabilities are read.
type seconds struct{ engine.Engine }

func (seconds) Capabilities() engine.Capabilities {
	return engine.Capabilities{TTLGranularity: time.Second}
}

func TestFitTTL(t *testing.T) {
	got, err := FitTTL(seconds{}, 1500*time.Millisecond)
	if err != nil || got != 2*time.Second {
		t.Errorf("FitTTL(1.5s) on whole seconds = %v, %v; want 2s", got, err)
	}
	got, err = FitTTL(seconds{}, 10*time.Millisecond)
	check(t, "FitTTL(10ms)", err, "ttl", "10ms is too short to renew; the minimum is 50ms")
	if got != 0 {
		t.Errorf("FitTTL(10ms) = %v, want 0 with the refusal", got)
	}
}

func TestLimitAndWeight(t *testing.T) {
	top := engine.RWPermits - 1
	for _, c := range []struct {
		name   string
		rule   func(int) error
		in     int
		arg    string
		reason string
	}{
		{"limit 1", Limit, 1, "limit", ""},
		{"limit at the bound", Limit, top, "limit", ""},
		{"limit 0", Limit, 0, "limit", "0 is not between 1 and 1073741823"},
		{"limit negative", Limit, -2, "limit", "-2 is not between 1 and 1073741823"},
		{"limit of an RW lock", Limit, engine.RWPermits, "limit", "1073741824 is not between 1 and 1073741823"},
		{"weight 1", Weight, 1, "weight", ""},
		{"weight at the bound", Weight, top, "weight", ""},
		{"weight 0", Weight, 0, "weight", "0 is not between 1 and the limit"},
		{"weight negative", Weight, -1, "weight", "-1 is not between 1 and the limit"},
		{"weight of a writer", Weight, engine.RWPermits, "weight", "1073741824 is not between 1 and the limit"},
	} {
		check(t, c.name, c.rule(c.in), c.arg, c.reason)
	}
}
