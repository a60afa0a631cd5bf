package procstop

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestWaitSeesEveryThreadStopped: Wait refuses a busy running process, and
// once it returns after SIGSTOP, the process is stopped. (Each harness's
// own test stops a multi-threaded server: etcdtest's
// TestStopStopsEveryThread.)
func TestWaitSeesEveryThreadStopped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread states come from /proc")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if err := Wait(pid, 20*time.Millisecond); err == nil {
		t.Fatal("Wait returned nil for a running process")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := Wait(pid, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, running, err := Stopped(pid); !ok || err != nil {
		t.Fatalf("after Wait: running%s (%v)", running, err)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
}
