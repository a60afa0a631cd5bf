package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// cursorBackends are the engines the cursor tests run on: the embedded
// one, a Redis server and a Redis Cluster of three masters.
func cursorBackends(t *testing.T) map[string]func(t *testing.T) engine.Engine {
	return map[string]func(t *testing.T) engine.Engine{
		"embedded": func(t *testing.T) engine.Engine { return nil },
		"redis": func(t *testing.T) engine.Engine {
			e, err := redisengine.New(redistest.Start(t).Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
		"cluster": func(t *testing.T) engine.Engine {
			e, err := redisengine.New(redistest.StartCluster(t, 3).Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		},
	}
}

// listNames lists every page of the locks under prefix with limit and
// returns the names served, and the cursors returned.
func listNames(t *testing.T, s *testServer, prefix string, limit string) (names, cursors []string) {
	t.Helper()
	cursor := ""
	for range 100 {
		q := url.Values{"prefix": {prefix}, "limit": {limit}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := call(t, http.MethodGet, s.url+"/v1/locks?"+q.Encode(), "", nil)
		want(t, "list", r, http.StatusOK, "")
		var page api.ListResponse
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, l := range page.Locks {
			names = append(names, l.Name)
		}
		if page.Next == "" {
			slices.Sort(names)
			return slices.Compact(names), cursors
		}
		cursor = page.Next
		cursors = append(cursors, cursor)
	}
	t.Fatal("the listing did not end in 100 pages")
	return nil, nil
}

// TestListCursorNotIssued: a listing cursor the server did not give
// (made by hand in the cursor's framing, as a tester's crafted ones were;
// a cursor given for another prefix; one given, then changed) is refused
// as invalid_argument with arg "cursor" on every engine, never a 503 nor
// a page; and changes nothing: every lock is still held and listed.
// Before, Redis answered 503 ("list: invalid cursor"), the embedded
// engine served a page from a made-up name, and a cursor carrying names
// served names outside its prefix.
func TestListCursorNotIssued(t *testing.T) {
	for backend, open := range cursorBackends(t) {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			s := start(t, open(t))
			held := []string{"a", "p/a", "p/b", "p/c", "p/d", "q/x"}
			for _, n := range held {
				mustAcquire(t, s, n, map[string]any{"ttl_ms": 60000})
			}
			all, _ := listNames(t, s, "", "100")
			if !slices.Equal(all, held) {
				t.Fatalf("listed %v, want %v", all, held)
			}
			pNames, cursors := listNames(t, s, "p/", "1")
			if len(cursors) == 0 || !slices.Equal(pNames, held[1:5]) {
				t.Fatalf("listing p/ by one: %v with cursors %q", pNames, cursors)
			}
			issued := cursors[0]
			forged := []string{
				"garbage", "5:abcde0:0:", "3:-120:0:", "0:0:0:0:", "0:0:0:2:}x", "0:0:0:1:a",
				"0:0:0:3:q/x", "0:1:a0:", "0:0:0:0:" + "\x00", "0:0:0:2:\xff\xfe",
				issued[:len(issued)-1], issued + "0:", "x" + issued[1:], strings.ToUpper(issued),
			}
			for _, c := range forged {
				for _, prefix := range []string{"", "p/"} {
					r := call(t, http.MethodGet, s.url+"/v1/locks?"+url.Values{"prefix": {prefix}, "cursor": {c}}.Encode(), "", nil)
					want(t, "cursor "+strconv.Quote(c), r, http.StatusBadRequest, api.CodeInvalidArgument)
					if arg := r.errField(t, "arg"); arg != "cursor" {
						t.Errorf("cursor %q: arg %v, want cursor", c, arg)
					}
				}
			}
			// A cursor given for p/ is not one of q/'s listing.
			r := call(t, http.MethodGet, s.url+"/v1/locks?"+url.Values{"prefix": {"q/"}, "cursor": {issued}}.Encode(), "", nil)
			want(t, "p/'s cursor with prefix q/", r, http.StatusBadRequest, api.CodeInvalidArgument)
			// The cursor given still serves its own listing.
			r = call(t, http.MethodGet, s.url+"/v1/locks?"+url.Values{"prefix": {"p/"}, "limit": {"1"}, "cursor": {issued}}.Encode(), "", nil)
			want(t, "the cursor given", r, http.StatusOK, "")
			if again, _ := listNames(t, s, "", "100"); !slices.Equal(again, held) {
				t.Fatalf("after the bad cursors: listed %v, want %v", again, held)
			}
		})
	}
}
