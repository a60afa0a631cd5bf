package distlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	_ "github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/internal/servertest"
	"github.com/distlock/distlock/server"
)

// TestOpenByURL opens each scheme of the root module on a real backend:
// two Clients opened by one URL exclude each other (they share the lock),
// and Close closes what Open connected.
func TestOpenByURL(t *testing.T) {
	rs := redistest.StartN(t, 3)
	tokens, err := server.ParseTokens("write:s3cret0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	_, srvURL := servertest.Start(t, memory.New(), false, server.WithTokens(tokens))
	hostPort := strings.TrimPrefix(srvURL, "http://")
	var shared [2]string // two servers of one Redis
	for i := range shared {
		eng, err := redisengine.New(rs[2].Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close() })
		_, u := servertest.Start(t, eng, false, server.WithTokens(tokens))
		shared[i] = strings.TrimPrefix(u, "http://")
	}
	urls := map[string]string{
		"redis":         rs[0].URL(),
		"redlock":       "redlock://" + rs[0].Addr() + "," + rs[1].Addr() + "," + rs[2].Addr() + "?node_timeout=200ms",
		"redis list":    rs[0].URL() + "," + rs[1].URL() + "," + rs[2].URL(),
		"redis params":  rs[1].URL() + "/0?dial_timeout=2s&protocol=3",
		"distlock":      "distlock://:s3cret0123456789abcdef@" + hostPort,
		"distlock list": "distlock://:s3cret0123456789abcdef@" + shared[0] + "," + shared[1],
		"distlock urls": "distlock://:s3cret0123456789abcdef@" + shared[0] + ",distlock://" + shared[1],
	}
	for kind, u := range urls {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b := open(t, u), open(t, u)
			name := "open-" + strings.ReplaceAll(kind, " ", "-")
			l, err := a.TryAcquire(ctx, name, distlock.WithTTL(5*time.Second))
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			if _, err := b.TryAcquire(ctx, name); !errors.Is(err, distlock.ErrLocked) {
				t.Fatalf("%s: a second Client of the same URL took a held lock: %v", kind, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpenMemIsPrivate: every mem:// is an engine of its own.
func TestOpenMemIsPrivate(t *testing.T) {
	ctx := context.Background()
	a, b := open(t, "mem://"), open(t, "MEM://")
	if _, err := a.TryAcquire(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "x"); err != nil {
		t.Fatalf("two mem:// engines share a lock: %v", err)
	}
}

// TestOpenBadURL: a bad URL is a typed error, names what is wrong, hides
// the password, and opens nothing.
func TestOpenBadURL(t *testing.T) {
	cases := []struct {
		url, param string
		want       error
	}{
		{"", "", engine.ErrBadURL},
		{"localhost:6379", "", engine.ErrBadURL},
		{"nope://:pw@host", "", engine.ErrUnknownScheme},
		{"mem://somewhere", "", engine.ErrBadURL},
		{"redis://:pw@127.0.0.1:1?bogus=1", "", engine.ErrBadURL},
		{"redis+sentinel://:pw@127.0.0.1:1", "master_name", engine.ErrBadURL},
		{"redlock://:pw@a:1,,b:2", "", engine.ErrBadURL},
		{"redlock://:pw@a:1,b:2,c:3?node_timeout=-1s", "node_timeout", engine.ErrBadURL},
		{"redlock://:pw@a:1,b:2,c:3?tls=maybe", "tls", engine.ErrBadURL},
		{"redis://:pw@a:1,distlock://b:2", "", engine.ErrBadURL},
		{"distlock://user:pw@b:2", "", engine.ErrBadURL},
		{"distlock://:pw@b:2?wait=1s", "", engine.ErrBadURL},
		{"distlock://:pw@b:2,redis://c:3", "", engine.ErrBadURL},
		{"distlock://:pw@b:2,,c:3", "", engine.ErrBadURL},
		{"distlock://:pw@b:2,:other@c:3", "", engine.ErrBadURL},
	}
	for _, c := range cases {
		cl, err := distlock.Open(context.Background(), c.url)
		if err == nil {
			_ = cl.Close()
			t.Errorf("Open(%q): no error", c.url)
			continue
		}
		var ue *engine.URLError
		if !errors.Is(err, c.want) || !errors.Is(err, distlock.ErrInvalidArgument) || !errors.As(err, &ue) {
			t.Errorf("Open(%q) = %v; want an *engine.URLError matching %v and ErrInvalidArgument", c.url, err, c.want)
			continue
		}
		if c.param != "" && ue.Param != c.param {
			t.Errorf("Open(%q): param %q, want %q (%v)", c.url, ue.Param, c.param, err)
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("Open(%q): the message shows the password: %v", c.url, err)
		}
	}
}

func open(t *testing.T, url string) *distlock.Client {
	t.Helper()
	c, err := distlock.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
