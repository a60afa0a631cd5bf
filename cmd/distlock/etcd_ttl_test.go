//go:build unix && !lite

package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestAcquireExtendPrintTheKeptTTL: etcd keeps ttls in whole seconds of at
// least 2s. acquire and extend print the ttl for the script that extends
// the lock in time; they must print the ttl the backend keeps, not the
// --ttl asked for, and say on standard error that it was rounded up, as
// run and elect do.
func TestAcquireExtendPrintTheKeptTTL(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	c := cli{env: map[string]string{"DISTLOCK_ETCD": strings.Join(cl.Endpoints(), ",")}}
	r := c.run(t, "acquire", "--ttl", "500ms", "kept")
	expect(t, r, 0, "DISTLOCK_TTL=2s\n", "keeps a ttl of 2s, not --ttl 500ms")
	owner := ""
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "DISTLOCK_OWNER="); ok {
			owner = v
		}
	}
	r = c.run(t, "acquire", "--json", "--ttl", "2500ms", "kept-json")
	expect(t, r, 0, `"ttl_ms": 3000`)
	r = c.run(t, "extend", "--ttl", "1500ms", "kept", owner)
	expect(t, r, 0, "expires in 2s", "keeps a ttl of 2s, not --ttl 1.5s")
	r = c.run(t, "extend", "--json", "--ttl", "1500ms", "kept", owner)
	expect(t, r, 0, `"ttl_ms": 2000`)
}
