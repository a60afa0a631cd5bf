package server

import (
	"context"
	"errors"
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
// event streams, lets the requests in progress finish (until ctx ends), and
// stops the server's goroutines. It releases nothing: on Redis the locks
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
	s.stopBackground()
	s.reportDropped(ctx)
	return errors.Join(errs...)
}

// Close stops the server at once: connections are closed, requests in
// progress are cut off. Like Shutdown it releases nothing.
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
