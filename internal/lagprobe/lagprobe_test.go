//go:build unix

package lagprobe

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestProbeSeesAStall: the process stopped for 300ms (SIGSTOP, continued by
// a child) is seen as a scheduling delay of at least 200ms, the stall less
// what of it can have overlapped one sleep and the child's start.
func TestProbeSeesAStall(t *testing.T) {
	p := Start()
	time.Sleep(3 * Step) // the probe is running
	cont := exec.Command("sh", "-c", "sleep 0.3; kill -CONT "+strconv.Itoa(os.Getpid()))
	if err := cont.Start(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := cont.Wait(); err != nil {
		t.Fatal(err)
	}
	if lag := p.Done(); lag < 200*time.Millisecond {
		t.Fatalf("measured %v through a 300ms stop of the process", lag)
	}
}
