package expiring_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/internal/expiring"
)

// TestEntriesExpire: an entry is there until its ttl ends, on synctest's
// clock, and Take forgets it.
func TestEntriesExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := expiring.New[string, int](10)
		m.Put("a", 1, time.Second)
		m.Put("b", 2, 3*time.Second)
		if v, ok := m.Get("a"); !ok || v != 1 {
			t.Fatalf("a: %v, %v; want 1", v, ok)
		}
		time.Sleep(time.Second)
		if _, ok := m.Get("a"); ok {
			t.Fatal("a is still there at its ttl")
		}
		if v, ok := m.Take("b"); !ok || v != 2 {
			t.Fatalf("b: %v, %v; want 2", v, ok)
		}
		if _, ok := m.Get("b"); ok {
			t.Fatal("b is still there after Take")
		}
	})
}

// TestBound: past max live entries, a new key is not kept (and says so),
// a live key is still replaced, and room comes back when entries expire.
func TestBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := expiring.New[int, string](2)
		if !m.Put(1, "x", time.Second) || !m.Put(2, "y", 2*time.Second) {
			t.Fatal("a Put below the bound was refused")
		}
		if m.Put(3, "z", time.Second) {
			t.Fatal("a third key was kept past the bound of 2")
		}
		if _, ok := m.Get(3); ok {
			t.Fatal("the refused key is there")
		}
		if !m.Put(1, "x2", time.Second) {
			t.Fatal("replacing a live key was refused at the bound")
		}
		time.Sleep(time.Second)
		if !m.Put(3, "z", time.Second) {
			t.Fatal("no room once an entry expired")
		}
		if v, ok := m.Get(2); !ok || v != "y" {
			t.Fatalf("2: %v, %v; want y", v, ok)
		}
	})
}
