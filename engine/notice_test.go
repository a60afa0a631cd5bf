package engine_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
)

// TestNoticeBox: the box keeps the notice that supersedes the others
// whatever their arrival order (a higher term; an ended term over its
// grant), the later of two values of one term, and a wake-up without a
// notice makes it untrusted until it is emptied.
func TestNoticeBox(t *testing.T) {
	held := func(tok uint64, v string) engine.Notice { return engine.Notice{Held: true, Token: tok, Metadata: v} }
	ended := func(tok uint64) engine.Notice { return engine.Notice{Token: tok} }
	cases := []struct {
		name string
		in   []engine.Notice
		want engine.Notice
	}{
		{"in order", []engine.Notice{held(1, "a"), ended(1), held(2, "b")}, held(2, "b")},
		{"reordered terms", []engine.Notice{held(2, "b"), held(1, "a")}, held(2, "b")},
		{"end before grant", []engine.Notice{ended(2), held(2, "b")}, ended(2)},
		{"values of one term", []engine.Notice{held(2, "b"), held(2, "c")}, held(2, "c")},
		{"duplicate", []engine.Notice{held(3, "c"), held(3, "c"), held(2, "b")}, held(3, "c")},
	}
	for _, c := range cases {
		var b engine.NoticeBox
		for _, n := range c.in {
			b.Put(n)
		}
		if got, ok := b.Notice(); !ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, ok, c.want)
		}
		if _, ok := b.Notice(); ok {
			t.Errorf("%s: the box was not emptied", c.name)
		}
	}
	var b engine.NoticeBox
	b.Put(held(1, "a"))
	b.Doubt()
	b.Put(held(2, "b"))
	if n, ok := b.Notice(); ok {
		t.Fatalf("after a wake-up without a notice: %+v trusted", n)
	}
	b.Put(held(3, "c"))
	if n, ok := b.Notice(); !ok || n != held(3, "c") {
		t.Fatalf("the doubt outlived its Notice: %+v %v", n, ok)
	}
}
