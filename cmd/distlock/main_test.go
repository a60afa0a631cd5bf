//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// binPath is the distlock binary built by TestMain (set once, before any
// test runs, and only read afterwards).
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "distlock-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "distlock")
	args := []string{"build", "-o", binPath}
	if raceBuild {
		args = append(args, "-race")
	}
	if buildTags != "" {
		args = append(args, "-tags", buildTags)
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building distlock:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// cli describes one run of the binary.
type cli struct {
	redis string            // DISTLOCK_REDIS ("" leaves it unset)
	env   map[string]string // more environment
	stdin string
}

// result is what a run of the binary did.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout:\n%s--- stderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// command builds the exec.Cmd for a run, with a clean DISTLOCK_ environment.
func (c cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DISTLOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if raceBuild {
		// The race runtime waits a second before exiting by default.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	if c.redis != "" {
		cmd.Env = append(cmd.Env, "DISTLOCK_REDIS="+c.redis)
	}
	for k, v := range c.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(c.stdin)
	return cmd
}

// run runs the binary to completion (within patience).
func (c cli) run(t *testing.T, args ...string) result {
	t.Helper()
	cmd := c.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return wait(t, cmd, start, &out, &errb, patience)
}

// wait waits for a started binary, killing it after timeout.
func wait(t *testing.T, cmd *exec.Cmd, start time.Time, out, errb *bytes.Buffer, timeout time.Duration) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("distlock %q did not exit within %v\nstdout: %s\nstderr: %s", cmd.Args[1:], timeout, out, errb)
	}
	r := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("distlock %q: %v", cmd.Args[1:], err)
	}
	return r
}

// expect checks a result's exit code and that its output contains each of
// the given strings.
func expect(t *testing.T, r result, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("want exit %d, got %v", code, r)
		return
	}
	for _, s := range contains {
		if !strings.Contains(r.stdout+r.stderr, s) {
			t.Errorf("output lacks %q:\n%v", s, r)
		}
	}
}

// library returns a distlock client on srv, as another process would use.
func library(t *testing.T, srv *redistest.Server) *distlock.Client {
	t.Helper()
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	c := distlock.New(eng)
	t.Cleanup(func() {
		_ = c.Close()
		_ = eng.Close()
	})
	return c
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closedPort returns a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// processGone reports whether pid has exited (a zombie counts as exited:
// an orphan may wait for a reaper that never comes in a container).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	end := bytes.LastIndexByte(data, ')')
	f := bytes.Fields(data[end+1:])
	return len(f) > 0 && (string(f[0]) == "Z" || string(f[0]) == "X")
}

// waitFile waits until path exists with content and returns it.
func waitFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pids parses "pid1 pid2 ..." from a file the child wrote.
func pids(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q in %q", f, s)
		}
		out = append(out, n)
	}
	return out
}
