package srvproc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/procstop"
)

// TestSlotLifecycle: a slot's process runs with its output in the log,
// pauses with every thread stopped, resumes, and is killed; a second Start
// replaces it (a restart).
func TestSlotLifecycle(t *testing.T) {
	s := &Slot{Label: "sh", Log: filepath.Join(t.TempDir(), "sh.log")}
	if s.Running() || s.Pid() != 0 {
		t.Fatal("a slot never started runs")
	}
	s.Kill() // nothing to kill: no panic
	s.Cont()
	for i := range 2 {
		if err := s.Start("sh", "-c", fmt.Sprintf("echo started %d; while :; do :; done", i)); err != nil {
			t.Fatal(err)
		}
		if !s.Running() {
			t.Fatalf("start %d: not running", i)
		}
		want := fmt.Sprintf("started %d\n", i)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.HasSuffix(s.LogTail(4000), want) {
			if time.Now().After(deadline) {
				t.Fatalf("start %d: log %q", i, s.LogTail(4000))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := s.Pause(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS == "linux" {
			if ok, running, err := procstop.Stopped(s.Pid()); !ok || err != nil {
				t.Fatalf("start %d: after Pause: running%s (%v)", i, running, err)
			}
		}
		s.Cont()
		s.Kill()
		if s.Running() {
			t.Fatalf("start %d: running after Kill", i)
		}
	}
	if log := s.LogTail(4000); log != "started 0\nstarted 1\n" {
		t.Fatalf("log %q: want both processes' output appended", log)
	}
	if tail := s.LogTail(2); tail != "1\n" {
		t.Fatalf("LogTail(2) = %q", tail)
	}
}

// TestTermFallsBackToKill: Term ends a process that ignores SIGTERM with
// SIGKILL after the grace.
func TestTermFallsBackToKill(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	p, err := Start("sh", []string{"-c", "trap '' TERM; echo trapped; while :; do sleep 0.01; done"}, log)
	if err != nil {
		t.Fatal(err)
	}
	// The trap is set once the shell says so: a SIGTERM before it would
	// end the shell by itself, and the fallback would go untested.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Contains(string(b), "trapped") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell did not set its trap within 10 s")
		}
	}
	if err := p.Term(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("not exited after Term")
	}
}

// fakeTB records StartFresh's messages; Fatal ends the calling goroutine
// as testing's does.
type fakeTB struct {
	testing.TB
	logs   []string
	failed bool
}

func (f *fakeTB) Helper()                      {}
func (f *fakeTB) Logf(format string, a ...any) { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }
func (f *fakeTB) Fatal(a ...any) {
	f.failed = true
	f.logs = append(f.logs, fmt.Sprint(a...))
	panic(f)
}
func (f *fakeTB) Fatalf(format string, a ...any) { f.Fatal(fmt.Sprintf(format, a...)) }
func (f *fakeTB) Failed() bool                   { return f.failed }

// TestStartFresh: a group whose member exited is started again, up to the
// attempts, and then fails naming the member.
func TestStartFresh(t *testing.T) {
	dir := t.TempDir()
	launch := func(exits int, calls *int) func() Group {
		return func() Group {
			*calls++
			var slots Group
			for i := range 2 {
				s := &Slot{Label: fmt.Sprintf("m%d", i), Log: filepath.Join(dir, fmt.Sprintf("m%d-%d.log", i, *calls))}
				script := "sleep 60"
				if i == 1 && *calls <= exits {
					script = "echo port taken; exit 1"
				}
				if err := s.Start("sh", "-c", script); err != nil {
					t.Fatal(err)
				}
				slots = append(slots, s)
			}
			t.Cleanup(slots.Kill)
			if *calls <= exits {
				slots[1].process().Wait(5 * time.Second) // exited, as a harness finds it after its wait for readiness
			}
			return slots
		}
	}
	calls := 0
	tb := &fakeTB{}
	StartFresh(tb, 3, launch(2, &calls))
	if calls != 3 || tb.failed || len(tb.logs) != 2 {
		t.Fatalf("two exits then a start: %d calls, failed %v, logs %q", calls, tb.failed, tb.logs)
	}

	calls = 0
	tb = &fakeTB{}
	func() {
		defer func() { _ = recover() }()
		StartFresh(tb, 3, launch(3, &calls))
	}()
	if calls != 3 || !tb.failed || !strings.Contains(tb.logs[len(tb.logs)-1], "m1 exited while its group started, 3 times") {
		t.Fatalf("three exits: %d calls, failed %v, logs %q", calls, tb.failed, tb.logs)
	}
	if !strings.Contains(strings.Join(tb.logs, "\n"), "port taken") {
		t.Fatalf("no log tail in %q", tb.logs)
	}
}

func TestFreeAddr(t *testing.T) {
	a := FreeAddr(t)
	if !strings.HasPrefix(a, "127.0.0.1:") || a == "127.0.0.1:0" {
		t.Fatalf("FreeAddr = %q", a)
	}
}
