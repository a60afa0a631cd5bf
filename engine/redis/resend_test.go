package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestReleaseMultiAfterOneMasterLostItsScripts: on a Cluster, a set's
// release is one pipeline over several masters. When one master lost its
// script cache (a restart, a failover to a replica that never ran the
// script, SCRIPT FLUSH), its releases fail with NOSCRIPT while the other
// masters' ran: only the failed ones are sent again, so every member is
// answered Released (sending the whole pipeline again released the others
// twice, the second copy answering "not held").
func TestReleaseMultiAfterOneMasterLostItsScripts(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client()
	eng, err := redisengine.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names, owners []string
	for i := range 12 {
		name, owner := fmt.Sprintf("resend-%d", i), fmt.Sprintf("o%d", i)
		g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute})
		if err != nil || !g.Acquired {
			t.Fatalf("acquire %q: %+v, %v", name, g, err)
		}
		names, owners = append(names, name), append(owners, owner)
	}
	// The script is cached everywhere (the acquires loaded the library's
	// scripts on every master); one master forgets them.
	if _, err := eng.ReleaseMulti(ctx, enginetest.ReleaseRequests([]string{"warm-up"}, "w")); err != nil {
		t.Fatal(err)
	}
	master, err := cc.MasterForKey(ctx, redisengine.DefaultPrefix+"{"+names[0]+"}")
	if err != nil {
		t.Fatal(err)
	}
	if err := master.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := eng.ReleaseMulti(ctx, enginetest.ReleaseRequests(names, owners...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != engine.Released {
			t.Errorf("%q: %v, want Released", names[i], r)
		}
	}
}
