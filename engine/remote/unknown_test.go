package remote_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// loss is what lossyProxy does with a request.
type loss int

const (
	passed      loss = iota // forwarded, answered
	answerLost              // forwarded, then the connection closed
	requestLost             // the connection closed, nothing forwarded
)

// lossyProxy forwards requests to target as mode says: a lost answer is a
// request that took effect on a server that died before it answered; a
// lost request one that died before it did anything. Either way the
// client sees its connection closed after it sent the request.
func lossyProxy(t *testing.T, target string, mode func(*http.Request) loss) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if mode(r) == requestLost {
			if c, _, herr := w.(http.Hijacker).Hijack(); herr == nil {
				_ = c.Close()
			}
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
		}
		if err != nil || mode(r) == answerLost {
			if c, _, herr := w.(http.Hijacker).Hijack(); herr == nil {
				_ = c.Close()
			}
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestUnknownOutcomeOnFailover: the first of two servers carries out an
// acquire or a release and dies before it answers. The acquire, sent again
// to the second server with its attempt id, is answered as the grant made:
// one hold, the same token. A release is not sent again (a second copy
// would drop a second hold): the second server is asked, and a lock the
// owner no longer holds counts as released; a re-entrant owner that still
// holds one of its two holds keeps it (the release's error is returned)
// instead of losing both, while a one-off owner's (one hold) release that
// never took effect is sent again.
func TestUnknownOutcomeOnFailover(t *testing.T) {
	_, urls := twoServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	drop := func(r *http.Request) loss {
		if strings.HasSuffix(r.URL.Path, "/acquire") || strings.HasSuffix(r.URL.Path, "/release") {
			return answerLost
		}
		return passed
	}
	proxied := lossyProxy(t, urls[0], drop) + "," + urls[1]
	direct := newRemote(t, urls[1])

	g, err := newRemote(t, proxied).Acquire(ctx, engine.AcquireRequest{Name: "x", Owner: "o1", Attempt: "o1", OneOff: true, TTL: time.Minute})
	if err != nil || !g.Acquired || g.Count != 1 {
		t.Fatalf("acquire whose first answer was lost: %+v, %v", g, err)
	}
	info, err := direct.Inspect(ctx, "x")
	if err != nil || info.Owner != "o1" || info.Count != 1 || info.Token != g.Token {
		t.Fatalf("after the acquire sent twice: %+v, %v (grant %+v)", info, err, g)
	}

	res, err := newRemote(t, proxied).Release(ctx, engine.ReleaseRequest{Name: "x", Owner: "o1"})
	if err != nil || res.Status != engine.Released {
		t.Fatalf("release whose answer was lost: %+v, %v", res, err)
	}
	if info, err := direct.Inspect(ctx, "x"); err != nil || info.Held {
		t.Fatalf("after the release: %+v, %v", info, err)
	}

	// A re-entrant owner with two holds: the lost release dropped one.
	for range 2 {
		if g, err := direct.Acquire(ctx, engine.AcquireRequest{Name: "re", Owner: "re", Attempt: time.Now().String(), TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatalf("re-entry: %+v, %v", g, err)
		}
	}
	if _, err := newRemote(t, proxied).Release(ctx, engine.ReleaseRequest{Name: "re", Owner: "re"}); err == nil {
		t.Fatal("a release of unknown outcome by an owner that still holds the lock was reported as done")
	}
	if info, err := direct.Inspect(ctx, "re"); err != nil || !info.Held || info.Count != 1 {
		t.Fatalf("after one release of two holds: %+v, %v; want one hold left", info, err)
	}

	// A one-off owner's release lost before it took effect: the owner
	// still holds once, so the release is sent again, and the lock is free
	// at once rather than at its ttl.
	deaf := lossyProxy(t, urls[0], func(r *http.Request) loss {
		if strings.HasSuffix(r.URL.Path, "/release") {
			return requestLost
		}
		return passed
	}) + "," + urls[1]
	e := newRemote(t, deaf)
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "y", Owner: "o2", Attempt: "o2", OneOff: true, TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("acquire: %+v, %v", g, err)
	}
	if res, err := e.Release(ctx, engine.ReleaseRequest{Name: "y", Owner: "o2"}); err != nil || res.Status != engine.Released {
		t.Fatalf("a one-off owner's release lost before it took effect: %+v, %v", res, err)
	}
	if info, err := direct.Inspect(ctx, "y"); err != nil || info.Held {
		t.Fatalf("after the one-off owner's release: %+v, %v", info, err)
	}
}
