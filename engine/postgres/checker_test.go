package postgres_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// checkerHarness is h for the randomized checker: each engine on a pool of
// its own that reaches PostgreSQL through a proxy of its own, which the
// checker stalls (every byte both ways held) while the engine's Client
// goes on: a backend stalled between two statements, or inside one, with
// its transaction's row locks held, as a slow disk, a long GC pause of
// the client or a congested link would stall it.
func checkerHarness(h enginetest.Harness, schema string) enginetest.Harness {
	stalls := &enginetest.Stalls{}
	h.New = func(t *testing.T) engine.Engine {
		p, err := pgtest.NewProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		url := strings.Replace(srv.URL(), "127.0.0.1:"+strconv.Itoa(srv.Port), p.Addr(), 1)
		e := newEngine(t, poolOn(t, url), schema)
		stalls.Add(e, p.Stall)
		return e
	}
	h.Faults = &enginetest.Faults{Stall: stalls.Stall}
	return h
}
