package redistest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// orphanEnv makes TestServerDiesWithTestBinary's child start a server and
// exit at once, its cleanups not run (as a panic or go test's timeout ends a
// test binary).
const orphanEnv = "DISTLOCK_REDISTEST_ORPHAN"

// TestServerDiesWithTestBinary: a redis-server started by a test binary
// that dies without its cleanups is gone soon after (procstop.Attr's
// parent-death signal), instead of loading the machine for the next runs.
// Without Pdeathsig in procstop.Attr it fails: the server stays up.
func TestServerDiesWithTestBinary(t *testing.T) {
	if os.Getenv(orphanEnv) == "1" {
		s := redistest.Start(t)
		fmt.Printf("pid %d\n", s.PID())
		os.Exit(0)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithTestBinary$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "pid" {
			pid, _ = strconv.Atoi(f[1])
		}
	}
	_ = cmd.Wait()
	if pid <= 0 {
		t.Fatal("the child test binary reported no server pid")
	}
	// The kernel sends the signal as the binary exits; a killed server is
	// then reaped by whoever adopted it, or stays a zombie: gone either way.
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("redis-server %d still running 30s after its test binary exited", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: no wait exists for a process that is not our child
	}
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
