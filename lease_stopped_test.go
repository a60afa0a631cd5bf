//go:build unix

package distlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// The holder process of TestLeaseStoppedPastDeadline is this test binary
// run again, with these environment variables.
const (
	envStoppedChild = "DISTLOCK_TEST_STOPPED_HOLDER" // "MODE CHECK NAME", see stoppedHolder
	envStoppedRedis = "DISTLOCK_TEST_STOPPED_REDIS"  // the redis-server's address
)

// stoppedTTL is the ttl of the stopped holders' leases.
const stoppedTTL = time.Second

// TestLeaseStoppedPastDeadline (issue 23): a holder process is stopped
// (SIGSTOP) while it holds an auto-renewed lease on a real redis-server,
// until another client has been granted the lock, then continued. The
// holder's first check after it continued must report the loss, whichever
// of Err, a fresh Done or Context().Err it is, and whether the holder was
// spinning on the check when stopped (mode spin: with GOMAXPROCS=1 its next
// check runs before the deadline timer's goroutine can) or blocked reading a
// line that the test writes after continuing it (mode line).
func TestLeaseStoppedPastDeadline(t *testing.T) {
	if spec := os.Getenv(envStoppedChild); spec != "" {
		stoppedHolder(t, spec)
		return
	}
	srv := redistest.Start(t)
	var holders []*holderProc
	for _, mode := range []string{"spin", "line"} {
		for _, check := range []string{"err", "done", "ctx"} {
			holders = append(holders, startHolder(t, srv.Addr(), mode, check))
		}
	}
	for _, h := range holders {
		h.expect(t, "HELD")
		h.signal(t, syscall.SIGSTOP) // at once: a spinning holder burns a core
	}

	// Another client takes every lock: the holders' leases have ended on
	// the server, so their local deadlines (earlier still) have passed.
	c := redisClient(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, h := range holders {
		if _, err := c.Acquire(ctx, h.name, distlock.WithTTL(time.Minute)); err != nil {
			t.Fatalf("taking %s from the stopped holder: %v", h.name, err)
		}
	}

	for _, h := range holders {
		h.signal(t, syscall.SIGCONT)
		if h.mode == "line" {
			if _, err := io.WriteString(h.stdin, "check\n"); err != nil {
				t.Fatalf("%s: %v", h.name, err)
			}
		}
	}
	for _, h := range holders {
		report := h.expect(t, "REPORT")
		t.Logf("%s: %s", h.name, report)
		if !strings.Contains(report, " lost=true past=true ") {
			t.Errorf("%s, first check after it was continued, while another client held the lock: %s", h.name, report)
		}
	}
}

// holderProc is a holder process and its pipes.
type holderProc struct {
	name, mode string
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	lines      chan string // its stdout, line by line; closed at EOF
}

// startHolder runs this test binary as a holder of the lock stopped-MODE-CHECK.
func startHolder(t *testing.T, redisAddr, mode, check string) *holderProc {
	h := &holderProc{name: "stopped-" + mode + "-" + check, mode: mode, lines: make(chan string, 16)}
	h.cmd = exec.Command(os.Args[0], "-test.run=^TestLeaseStoppedPastDeadline$", "-test.count=1")
	h.cmd.Env = append(os.Environ(), "GOMAXPROCS=1",
		envStoppedChild+"="+mode+" "+check+" "+h.name, envStoppedRedis+"="+redisAddr)
	h.cmd.Stderr = os.Stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGCONT)
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	return h
}

// expect returns the first line of the holder's output that starts with
// prefix, failing t when the holder ends or stays silent for a minute.
func (h *holderProc) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("%s ended without a %s line", h.name, prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("%s: no %s line within a minute", h.name, prefix)
		}
	}
}

func (h *holderProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v: %v", h.name, sig, err)
	}
}

// stoppedHolder is the holder process: spec is "MODE CHECK NAME". It
// acquires NAME, says HELD, and then makes CHECK (err: Err(); done: a fresh
// Done() in a non-blocking select; ctx: Err of the Context() taken at the
// grant) in a loop until a check reports the loss or begins at or after the
// lease's deadline (MODE spin), or once after reading a line from stdin
// (MODE line). It prints what that check said as a REPORT line.
func stoppedHolder(t *testing.T, spec string) {
	var mode, check, name string
	if _, err := fmt.Sscan(spec, &mode, &check, &name); err != nil {
		t.Fatalf("%s=%q: %v", envStoppedChild, spec, err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: os.Getenv(envStoppedRedis), ContextTimeoutEnabled: true})
	defer func() { _ = rdb.Close() }()
	eng, err := redisengine.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	c := distlock.New(eng)
	defer func() { _ = c.Close() }()
	l, err := c.Acquire(t.Context(), name, distlock.WithTTL(stoppedTTL))
	if err != nil {
		t.Fatal(err)
	}
	lctx := l.Context()
	lost := map[string]func() error{
		"err": l.Err,
		"done": func() error {
			select {
			case <-l.Done():
				return errors.New("Done closed")
			default:
				return nil
			}
		},
		"ctx": lctx.Err,
	}[check]
	fmt.Println("HELD")
	if mode == "line" && !bufio.NewScanner(os.Stdin).Scan() {
		t.Fatal("stdin closed before the line to check on")
	}
	give := time.Now().Add(time.Minute) // the parent is gone, or never stopped it
	for time.Now().Before(give) {
		deadline := l.Deadline()
		began := time.Now()
		err := lost()
		ended := time.Now()
		// A loss is right once the check returns past the deadline (it may
		// have been stopped midway); held is wrong once it begins past it.
		past := !ended.Before(deadline)
		if err == nil {
			past = !began.Before(deadline)
		}
		if err != nil || past || mode == "line" {
			fmt.Printf("REPORT check=%s mode=%s lost=%v past=%v (began %v after the deadline) said: %v\n",
				check, mode, err != nil, past, began.Sub(deadline).Round(time.Millisecond), err)
			return
		}
	}
	t.Fatalf("no check past the deadline within a minute (GOMAXPROCS %d)", runtime.GOMAXPROCS(0))
}
