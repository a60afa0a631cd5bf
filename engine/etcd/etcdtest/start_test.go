package etcdtest

import (
	"net"
	"testing"

	"github.com/distlock/distlock/internal/srvproc"
)

// TestStartAgainOnTakenPort: when a member cannot bind its port (taken by
// another process between the pick and the bind), Start begins again on
// fresh ports instead of waiting for a leader that cannot be elected. The
// first address picked here is held by a listener of the test's own.
func TestStartAgainOnTakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	picks := 0
	pick := func(t srvproc.TB) string {
		picks++
		if picks == 1 {
			return held.Addr().String()
		}
		return srvproc.FreeAddr(t)
	}
	c := start(t, 1, pick)
	if picks != 4 {
		t.Fatalf("%d addresses picked, want 4 (two per attempt, two attempts)", picks)
	}
	if _, err := c.Leader(c.Client(t)); err != nil {
		t.Fatalf("cluster started on fresh ports has no leader: %v", err)
	}
}
