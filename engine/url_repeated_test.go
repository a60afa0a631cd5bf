package engine_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/distlock/distlock/engine"
)

// TestURLParamsRefusesRepeated: a parameter given twice is a bad URL
// naming it, even one the opener took (it would use one value silently).
func TestURLParamsRefusesRepeated(t *testing.T) {
	p := engine.NewURLParams("etcd://h:1?prefix=a&prefix=b", url.Values{"prefix": {"a", "b"}})
	_ = p.String("prefix", "")
	var ue *engine.URLError
	if err := p.Done(); !errors.As(err, &ue) || !errors.Is(err, engine.ErrBadURL) || ue.Param != "prefix" {
		t.Fatalf("Done = %v, want a bad URL with Param prefix", err)
	}
}

// TestRefuseRepeatedKeepsLists: a parameter that is a list by design
// (named in lists) may be repeated.
func TestRefuseRepeatedKeepsLists(t *testing.T) {
	q := url.Values{"addr": {"a:1", "b:1"}, "x": {"1"}}
	if err := engine.RefuseRepeated("redis://h:1?addr=a:1&addr=b:1&x=1", q, "addr"); err != nil {
		t.Fatal(err)
	}
}
