package redistest

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

var (
	// errClosed is returned by lifecycle operations on a closed Server.
	errClosed = errors.New("redistest: server is closed")
	// errPortBusy marks a start that failed because the port was in use.
	errPortBusy = errors.New("port in use")
)

// running reports whether the current process is alive. s.mu must be held.
func (s *Server) running() bool {
	return s.proc != nil && !s.proc.Exited()
}

// Running reports whether the redis-server process is alive. A paused
// (SIGSTOPped) server counts as running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running()
}

// Stop shuts the server down gracefully with SIGTERM and waits for it to
// exit; if it has not exited within 5 seconds it is killed with SIGKILL.
// A paused server is resumed first. Stopping a stopped server is a no-op.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if !s.running() {
		return nil
	}
	s.paused = false
	return redisErr(s.proc.Term(stopWait))
}

// Kill kills the server with SIGKILL, as in a crash, and waits for it to
// exit. Killing a stopped server is a no-op.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if !s.running() {
		return nil
	}
	s.paused = false
	return redisErr(s.proc.Kill())
}

// Pause freezes the server with SIGSTOP: connections stay open but nothing
// is answered until Resume. Close and Kill still work on a paused server.
func (s *Server) Pause() error {
	return s.sendStopCont(syscall.SIGSTOP, true)
}

// Resume lets a paused server continue with SIGCONT.
func (s *Server) Resume() error {
	return s.sendStopCont(syscall.SIGCONT, false)
}

// sendStopCont implements Pause and Resume.
func (s *Server) sendStopCont(sig syscall.Signal, paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if !s.running() {
		return fmt.Errorf("redistest: %v: server on %s is not running", sig, s.addr)
	}
	var err error
	if sig == syscall.SIGSTOP {
		// Every thread stopped, not only the one that took the signal.
		err = s.proc.Pause(30 * time.Second)
	} else {
		err = s.proc.Signal(sig)
	}
	if err != nil {
		return redisErr(err)
	}
	s.paused = paused
	return nil
}

// Restart starts the server again on the same port and in the same
// directory, and waits until it answers PING. A running server is killed
// first. Without persistence the data is gone; with WithPersistence the AOF
// is replayed before Restart returns. If the port is briefly unavailable,
// Restart keeps trying for about 3 seconds.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.running() {
		if err := s.proc.Kill(); err != nil {
			return redisErr(err)
		}
	}
	s.paused = false

	deadline := time.Now().Add(restartWindow)
	for {
		p, err := s.launch()
		if err == nil {
			s.proc = p
			return nil
		}
		if !errors.Is(err, errPortBusy) || time.Now().After(deadline) {
			return fmt.Errorf("redistest: restart on %s: %w", s.addr, err)
		}
		time.Sleep(restartPause)
	}
}

// redisErr marks an error of srvproc's as this package's (nil stays nil).
func redisErr(err error) error {
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}
