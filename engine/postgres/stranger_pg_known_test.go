package postgres_test

// A defect a stranger found on PostgreSQL whose fix lay outside
// engine/postgres (the root package's LeaseSet).

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// TestStrangerPGLostSetKeepsMembers: a set (AcquireAll) one of whose
// members is force-released ends: its Done closes, its Err is that
// member's *LostError ("releasing or losing it ends the whole set",
// docs/API.md). Its other member must then be let go (released, or left
// to expire): nobody works under the set any more. The Client kept
// renewing the surviving member for as long as it lived, unless the
// holder called Release: another client waiting for that name waited for
// good (here, until its 20 s wait ended), though the set it belonged to
// was reported lost. The watchdog now stops renewing a lost set's members
// (LeaseSet.end), which lapse at their ttl.
func TestStrangerPGLostSetKeepsMembers(t *testing.T) {
	migrated(t, strangerAdminSchema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := strangerAdminClient(t, "stranger-lostset-holder")
	other := strangerAdminClient(t, "stranger-lostset-other")
	name := uniqueName(t)
	set, err := holder.AcquireAll(ctx, []string{name + "-1", name + "-2"}, distlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := other.ForceRelease(ctx, name+"-2"); !ok || err != nil {
		t.Fatalf("ForceRelease: %v, %v", ok, err)
	}
	select {
	case <-set.Done():
	case <-ctx.Done():
		t.Fatal("the set never ended after a member was force-released")
	}
	t.Logf("the set ended: %v; its surviving member's lease: %v", set.Err(), set.Lease(name+"-1").Err())
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	l, err := other.Acquire(wctx, name+"-1")
	if err != nil {
		info, _ := other.Inspect(ctx, name+"-1")
		t.Fatalf("the set ended, yet its surviving member %q is still held by the set's owner (%s, %v left; set owner %s): waiting for it: %v",
			name+"-1", info.Owner, info.TTL, set.Owner(name+"-1"), err)
	}
	_ = l.Release(ctx)
}
