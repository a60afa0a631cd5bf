package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/distlock/distlock/engine"
)

// isStopping reports whether shutdown has begun.
func (s *Server) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// beginStop makes waiting requests answer shutting_down and event streams
// end, and refuses new ones.
func (s *Server) beginStop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		close(s.stopping)
		s.mu.Unlock()
	})
}

// stopBackground ends the server's goroutines and waits for them.
func (s *Server) stopBackground() {
	s.bgOnce.Do(func() {
		s.dash.stop()
		close(s.bgStop)
		_ = s.watcher.Close() // ends the election watches
	})
	s.bg.Wait()
}

// Shutdown stops the server gracefully: it stops accepting connections,
// answers every waiting acquire with shutting_down (HTTP 503) and ends the
// event streams, lets the requests in progress finish (until ctx ends),
// waits (until ctx ends) for the engine calls that answered requests left
// to finish (the settlement of an attempt a wait abandoned, a waiter's
// last heartbeat: each bounded by the 10 s engine bound), and stops the
// server's goroutines. It releases nothing: on Redis the locks
// that clients hold stay theirs, and their leases go on through another
// server. On the embedded engine the locks live in this process: Shutdown
// logs how many are held, and they are dropped when the engine is closed
// or the process exits. Close the engine after Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginStop()
	s.mu.Lock()
	servers := append([]*http.Server(nil), s.servers...)
	s.mu.Unlock()
	var errs []error
	for _, hs := range servers {
		if err := hs.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.awaitDetached(ctx); err != nil {
		errs = append(errs, err)
	}
	s.stopBackground()
	s.reportDropped(ctx)
	return errors.Join(errs...)
}

// awaitDetached waits for the detached engine calls (detach) until ctx
// ends; those still running then end within their own engine bound.
func (s *Server) awaitDetached(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.detached.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: engine calls left by answered requests still running: %w", ctx.Err())
	}
}

// Close stops the server at once: connections are closed, requests in
// progress are cut off, and the engine calls answered requests left to
// finish go on in the background, each within the engine bound. Like
// Shutdown it releases nothing.
func (s *Server) Close() error {
	s.beginStop()
	s.mu.Lock()
	servers := append([]*http.Server(nil), s.servers...)
	s.mu.Unlock()
	var errs []error
	for _, hs := range servers {
		if err := hs.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.stopBackground()
	return errors.Join(errs...)
}

// HeldLocks counts the locks held on the server's engine (for the embedded
// engine's shutdown message). It returns -1 when the engine cannot list.
func (s *Server) HeldLocks(ctx context.Context) (int, error) {
	lister, ok := s.eng.(engine.Lister)
	if !ok {
		return -1, nil
	}
	seen := map[string]bool{}
	cursor := ""
	for {
		infos, next, err := lister.List(ctx, "", cursor, MaxListLimit)
		if _, ok := engine.AsPartial(err); err != nil && !ok {
			return len(seen), err
		}
		for _, i := range infos {
			seen[i.Name] = true
		}
		if next == "" {
			return len(seen), nil
		}
		cursor = next
	}
}

// reportDropped says, on the embedded engine, that the held locks go away
// with the process.
func (s *Server) reportDropped(ctx context.Context) {
	if !s.embedded {
		return
	}
	n, err := s.HeldLocks(ctx)
	if err != nil {
		n = -1
	}
	s.log.Warn("distlock: the embedded engine's locks are dropped with this server: their holders will see their leases lost at their next renewal",
		"held", n)
}
