package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

func TestOpenUnknownScheme(t *testing.T) {
	_, err := engine.Open(context.Background(), "nosuch://:hidden@host")
	var ue *engine.URLError
	if !errors.Is(err, engine.ErrUnknownScheme) || !errors.As(err, &ue) || ue.URL != "nosuch://****@host" {
		t.Fatalf("Open = %v; want an *engine.URLError matching ErrUnknownScheme, password hidden", err)
	}
}

// registered counts TestRegisterTwicePanics's runs: the registry is the
// process's, so each run (go test -count=N) registers a scheme of its own.
var registered atomic.Int64

func TestRegisterTwicePanics(t *testing.T) {
	open := func(context.Context, string, engine.OpenConfig) (engine.Engine, error) { return nil, nil }
	scheme := fmt.Sprintf("test+twice%d", registered.Add(1))
	engine.Register(scheme, open)
	defer func() {
		if recover() == nil {
			t.Fatal("a second Register of one scheme did not panic")
		}
	}()
	engine.Register(scheme, open)
}

func TestURLParams(t *testing.T) {
	raw := "x://h?d=2s&b=true&s=v"
	q, _ := url.ParseQuery("d=2s&b=true&s=v&typo=1")
	p := engine.NewURLParams(raw, q)
	if p.Duration("d", 0) != 2*time.Second || !p.Bool("b", false) || p.String("s", "") != "v" || p.String("absent", "def") != "def" {
		t.Fatal("parameters misread")
	}
	var ue *engine.URLError
	if err := p.Done(); !errors.As(err, &ue) || ue.Param != "typo" || !errors.Is(err, engine.ErrBadURL) {
		t.Fatalf("Done = %v; want the unknown parameter typo", err)
	}
	q, _ = url.ParseQuery("d=-1s")
	p = engine.NewURLParams(raw, q)
	p.Duration("d", 0)
	if err := p.Done(); !errors.As(err, &ue) || ue.Param != "d" {
		t.Fatalf("Done = %v; want the bad duration d", err)
	}
}

func TestParseHostList(t *testing.T) {
	h, err := engine.ParseHostList("Etcd://u%40x:p%3Aw@a:1,b:2/db?k=v")
	if err != nil {
		t.Fatal(err)
	}
	user, pw := h.User()
	if h.Scheme != "etcd" || len(h.Hosts) != 2 || h.Hosts[1] != "b:2" || h.Path != "db" || h.Query.Get("k") != "v" || user != "u@x" || pw != "p:w" {
		t.Fatalf("parsed %+v (user %q, password %q)", h, user, pw)
	}
	if _, err := engine.ParseHostList("etcd://a:1,,b:2"); !errors.Is(err, engine.ErrBadURL) {
		t.Fatalf("an empty host: %v", err)
	}
}
