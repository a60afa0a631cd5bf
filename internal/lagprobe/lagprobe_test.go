//go:build unix

package lagprobe

import (
	"os"
	"os/exec"
	"runtime"
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
	stopped := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The stop's own length, as this goroutine saw it: the kill returns
	// once the process is continued. A stop that did not take (a SIGCONT
	// from elsewhere first) is no stall to measure.
	held := time.Since(stopped)
	if err := cont.Wait(); err != nil {
		t.Fatal(err)
	}
	lag := p.Done()
	if held < 200*time.Millisecond && lag < 200*time.Millisecond {
		t.Skipf("the process was stopped for %v only (continued from elsewhere?): no stall to measure (probe: %v)", held, lag)
	}
	if lag < 200*time.Millisecond {
		t.Fatalf("measured %v through a 300ms stop of the process", lag)
	}
}

// TestWatchSeesRunQueueWait: busy processes outnumbering the CPUs wait for
// one; the probe watching one of them sees that wait (Waited > 0) and
// keeps its last sample after the process exits.
func TestWatchSeesRunQueueWait(t *testing.T) {
	if _, ok := runDelay(os.Getpid()); !ok {
		t.Skip("the kernel keeps no run-queue accounts (/proc/PID/task/*/schedstat)")
	}
	var busy []*exec.Cmd
	for range 2*runtime.NumCPU() + 1 {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		busy = append(busy, c)
	}
	p := Start()
	p.Watch(busy[0].Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for p.Waited() == 0 && time.Now().Before(deadline) {
		time.Sleep(Step)
	}
	for _, c := range busy {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	p.Done()
	if w := p.Waited(); w <= 0 {
		t.Fatalf("a busy process among %d busy ones on %d CPUs waited %v for a CPU, by the probe", len(busy), runtime.NumCPU(), w)
	}
}
