package srvproc

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// Slot is one member of a harness's group (an etcd member, a ZooKeeper
// server): its current process, which Start replaces (a restart on the
// member's data), with what names it in messages and where its output
// goes. A harness's member type embeds it. Its methods are safe for
// concurrent use.
type Slot struct {
	Label string // names the member in messages: "etcd m0"
	Log   string // the file its processes' output is appended to

	mu sync.Mutex
	p  *Process // nil before the first Start
}

// Start starts bin with args as the slot's process (Start), replacing
// the one before, which must have exited (Kill).
func (s *Slot) Start(bin string, args ...string) error {
	p, err := Start(bin, args, s.Log)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	return nil
}

// process returns the current process, nil before the first Start.
func (s *Slot) process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// Pid returns the current process's id (0 before the first Start).
func (s *Slot) Pid() int {
	if p := s.process(); p != nil {
		return p.Pid()
	}
	return 0
}

// Running reports whether the member's process runs (stopped or not).
func (s *Slot) Running() bool {
	p := s.process()
	return p != nil && !p.Exited()
}

// Kill kills the member's process (SIGKILL to its process group, after a
// SIGCONT) and waits for it to exit.
func (s *Slot) Kill() {
	if p := s.process(); p != nil {
		_ = p.Kill() // an error: the kernel did not reap it within killWait
	}
}

// Pause stops the member's process (SIGSTOP) and returns once every
// thread of it is stopped (procstop), or an error after timeout. kill(2)
// returns as soon as the signal is queued, and the kernel wakes one thread
// to take it: on a busy machine the others go on running until that one is
// scheduled (milliseconds, sometimes tens), answering requests after the
// pause would otherwise have returned.
func (s *Slot) Pause(timeout time.Duration) error {
	if p := s.process(); p != nil {
		return p.Pause(timeout)
	}
	return nil
}

// Cont resumes a paused member (SIGCONT).
func (s *Slot) Cont() {
	if p := s.process(); p != nil {
		_ = p.Signal(syscall.SIGCONT)
	}
}

// LogTail returns at most the last n bytes of the member's log.
func (s *Slot) LogTail(n int) string {
	b, _ := os.ReadFile(s.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
