package remote_test

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/internal/stallproxy"
)

// stalledRemotes is h for the randomized checker: each remote engine
// reaches the server at url through a proxy of its own, which the checker
// stalls (every byte both ways held) while the engine's Client goes on.
func stalledRemotes(h enginetest.Harness, url string) enginetest.Harness {
	stalls := &enginetest.Stalls{}
	scheme, addr, _ := strings.Cut(url, "://")
	h.New = func(t *testing.T) engine.Engine {
		p, err := stallproxy.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		e := newRemote(t, scheme+"://"+p.Addr())
		stalls.Add(e, p.Stall)
		return e
	}
	h.Faults = &enginetest.Faults{Stall: stalls.Stall}
	return h
}
