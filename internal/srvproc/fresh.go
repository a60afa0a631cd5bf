package srvproc

import (
	"fmt"
	"net"
	"strconv"
)

// FreePort asks the kernel for a free loopback port. The port is released
// before returning, so a caller must cope with losing a race for it
// (StartFresh).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	return port, nil
}

// FreeAddr returns a loopback address, "127.0.0.1:PORT", with a port free
// right now (FreePort); it fails t when none can be had.
func FreeAddr(t TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// Group is the slots of a harness's members, started together.
type Group []*Slot

// StartFresh starts a group of members with launch, which starts their
// processes on ports picked free (FreeAddr) and waits until they serve
// (failing t when they do not), and returns the group. A member whose
// process has exited by then most likely found a port taken by another
// process between the pick and its bind: StartFresh kills the group and
// calls launch again, on fresh ports, up to attempts times in all, then
// fails t with the members' logs. The group's own cleanup (Stop,
// registered by launch) runs when t ends, for every attempt.
func StartFresh(t TB, attempts int, launch func() Group) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		g := launch()
		dead := g.exited()
		if dead == nil {
			return
		}
		if attempt >= attempts {
			g.DumpLogs(t)
			t.Fatalf("%s exited while its group started, %d times", dead.Label, attempt)
		}
		t.Logf("%s exited while its group started (a port taken meanwhile?): starting again on fresh ports", dead.Label)
		g.Kill()
	}
}

// exited returns a member whose process has exited (nil: none).
func (g Group) exited() *Slot {
	for _, s := range g {
		if !s.Running() {
			return s
		}
	}
	return nil
}

// Kill kills every member's process (Slot.Kill).
func (g Group) Kill() {
	for _, s := range g {
		s.Kill()
	}
}

// Stop is a group's cleanup: it kills every member and, when t failed,
// logs the tails of their logs.
func (g Group) Stop(t TB) {
	g.Kill()
	if t.Failed() {
		g.DumpLogs(t)
	}
}

// DumpLogs logs the tail of every member's log (its last 4000 bytes).
func (g Group) DumpLogs(t TB) {
	t.Helper()
	for _, s := range g {
		t.Logf("%s log (tail):\n%s", s.Label, s.LogTail(4000))
	}
}
