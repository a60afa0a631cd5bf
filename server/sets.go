package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Sets of locks (distlock.Client.AcquireAll through the remote engine, or
// anyone): POST /v1/sets/acquire grants every lock of a set in one step of
// the engine (engine.MultiAcquirer), or none; POST /v1/sets/release
// releases a set in one engine call (engine.MultiReleaser) where the
// engine has it. An engine without sets answers not_atomic, and the
// caller takes the locks one by one.

// handleSetAcquire serves POST /v1/sets/acquire: one attempt, no waiting.
func (s *Server) handleSetAcquire(w http.ResponseWriter, r *http.Request, role Role) {
	var req api.SetAcquireRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	rs, own, e := s.checkSetAcquire(req)
	if e != nil {
		writeError(w, e)
		return
	}
	ma, ok := s.eng.(engine.MultiAcquirer)
	if !ok {
		writeError(w, notAtomic("this server's engine cannot grant several locks in one step"))
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	start := time.Now()
	mg, err := ma.AcquireMulti(ctx, rs)
	if err == nil && mg.Acquired && len(mg.Tokens) != len(rs) {
		err = fmt.Errorf("engine answered %d tokens for %d locks", len(mg.Tokens), len(rs))
	}
	switch {
	case errors.Is(err, engine.ErrNotAtomic):
		writeError(w, notAtomic(err.Error()))
		return
	case err == nil && !mg.Acquired && (mg.Blocked < 0 || mg.Blocked >= len(rs)):
		writeError(w, backendUnavailable("acquire set", fmt.Errorf("engine refused lock %d of %d", mg.Blocked, len(rs))))
		return
	case err == nil && !mg.Acquired:
		name := rs[mg.Blocked].Name
		o := acquireOutcome{grant: mg.Grant, sent: start, contended: true}
		s.notGranted(&o, name, start, nil, nil)
		o.err.detail.Name = name
		if role < RoleAdmin {
			o.err.detail.Holder = ""
		}
		s.obs.AcquireFailed(name, o.waited, o.failure)
		writeError(w, o.err)
		return
	case err != nil || r.Context().Err() != nil:
		// A grant the client will never hear of (or may have been made: a
		// failed call): the server's own owners are released; a client's
		// own owner is the client's to clean up. In the background: the
		// answer does not wait for a second engine call (engineTimeout).
		if own {
			go s.releaseSet(rs)
		}
		if err != nil {
			// Counted as a single lock's failed attempt is (refused,
			// backend, ...: attemptFailure), under the set's first name.
			s.obs.AcquireFailed(rs[0].Name, time.Since(start), attemptFailure(rs[0].Name, err))
			writeError(w, engineErr("acquire set", err))
		}
		return
	}
	out := api.SetAcquireResponse{Locks: make([]api.SetGrant, len(rs))}
	for i, q := range rs {
		s.holds.granted(q.Name, q.Owner, mg.Tokens[i], 1, q.TTL, time.Since(start), false)
		out.Locks[i] = api.SetGrant{Name: q.Name, Owner: q.Owner, Token: mg.Tokens[i], TTLMs: q.TTL.Milliseconds()}
	}
	writeJSON(w, http.StatusOK, out)
}

// checkSetAcquire checks a set's request and returns the engine's
// requests; own reports that the server made the owner of some lock.
func (s *Server) checkSetAcquire(req api.SetAcquireRequest) (rs []engine.AcquireRequest, own bool, e *apiError) {
	if e := checkSetSize(len(req.Locks)); e != nil {
		return nil, false, e
	}
	var made string
	rs = make([]engine.AcquireRequest, len(req.Locks))
	seen := make(map[string]bool, len(req.Locks))
	for i, l := range req.Locks {
		ttl, e := s.ttlFrom(l.TTLMs)
		e = firstErr(s.validateName(l.Name), e, validateOwner(l.Owner), validateMetadata(l.Metadata), validateAttempt(l.Attempt))
		if e == nil && seen[l.Name] {
			e = badRequest("name", fmt.Sprintf("invalid name: %q is given twice", l.Name))
		}
		if e != nil {
			return nil, false, itemErr("locks", i, e)
		}
		seen[l.Name] = true
		owner, attempt, oneOff := l.Owner, l.Attempt, l.OneOff
		if owner == "" {
			if made == "" {
				made = s.owners.Next()
			}
			owner, own, oneOff = made, true, true
		}
		switch {
		case attempt == "" && oneOff:
			attempt = owner
		case attempt == "":
			// The client's own owner may hold other locks: an attempt
			// of its own tells this request's grants from them.
			attempt = s.owners.Next()
		}
		rs[i] = engine.AcquireRequest{Name: l.Name, Owner: owner, Attempt: attempt, OneOff: oneOff && attempt == owner, TTL: ttl, Metadata: l.Metadata}
	}
	if err := engine.CheckSet(rs); err != nil {
		return nil, false, engineErr("acquire set", err)
	}
	return rs, own, nil
}

// checkSetSize refuses a set of no lock or of more than
// distlock.MaxSetSize.
func checkSetSize(n int) *apiError {
	if n == 0 || n > distlock.MaxSetSize {
		return badRequest("locks", fmt.Sprintf("invalid locks: %d locks; a set takes 1 to %d", n, distlock.MaxSetSize))
	}
	return nil
}

// itemErr places e, the error of field's item i, in the request.
func itemErr(field string, i int, e *apiError) *apiError {
	e.detail.Message = fmt.Sprintf("%s[%d]: %s", field, i, e.detail.Message)
	e.detail.Arg = fmt.Sprintf("%s[%d].%s", field, i, e.detail.Arg)
	return e
}

// notAtomic is the answer for locks the engine cannot grant in one step.
func notAtomic(msg string) *apiError {
	return newError(http.StatusNotImplemented, api.CodeNotAtomic, msg+"; take the locks one by one, in sorted order")
}

// releaseSet releases the locks of rs (a grant nobody will use), detached
// from the request.
func (s *Server) releaseSet(rs []engine.AcquireRequest) {
	rels := make([]engine.ReleaseRequest, len(rs))
	for i, q := range rs {
		rels[i] = engine.ReleaseRequest{Name: q.Name, Owner: q.Owner}
	}
	ctx, cancel := engineContext(context.Background())
	defer cancel()
	_, _ = s.engineReleaseSet(ctx, rels)
}

// engineReleaseSet releases each lock of rs: in one call where the engine
// can (engine.MultiReleaser), else one by one.
func (s *Server) engineReleaseSet(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if mr, ok := s.eng.(engine.MultiReleaser); ok {
		res, err := mr.ReleaseMulti(ctx, rs)
		if err == nil && len(res) != len(rs) {
			err = fmt.Errorf("engine answered %d results for %d releases", len(res), len(rs))
		}
		return res, err
	}
	res := make([]engine.ReleaseResult, len(rs))
	for i, r := range rs {
		var err error
		if res[i], err = s.eng.Release(ctx, r); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// handleSetRelease serves POST /v1/sets/release.
func (s *Server) handleSetRelease(w http.ResponseWriter, r *http.Request, _ Role) {
	var req api.SetReleaseRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := checkSetSize(len(req.Locks)); e != nil {
		writeError(w, e)
		return
	}
	rs := make([]engine.ReleaseRequest, len(req.Locks))
	for i, l := range req.Locks {
		if e := firstErr(s.validateName(l.Name), requireOwner(l.Owner)); e != nil {
			writeError(w, itemErr("locks", i, e))
			return
		}
		rs[i] = engine.ReleaseRequest{Name: l.Name, Owner: l.Owner, Token: l.Token}
	}
	if err := engine.CheckReleaseSet(rs); err != nil {
		writeError(w, engineErr("release set", err))
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	res, err := s.engineReleaseSet(ctx, rs)
	if err != nil {
		writeError(w, engineErr("release set", err))
		return
	}
	out := api.SetReleaseResponse{Results: make([]api.SetReleaseResult, len(res))}
	for i, x := range res {
		name, owner := rs[i].Name, rs[i].Owner
		switch x.Status {
		case engine.Released:
			s.holds.released(name, owner, x.Remaining)
			out.Results[i] = api.SetReleaseResult{Status: api.StatusReleased, Remaining: x.Remaining}
		case engine.NotOwner:
			if s.newerGrant(ctx, name, owner, rs[i].Token) {
				s.holds.lostOldGrant() // the owner's newer grant stays tracked
			} else {
				s.holds.lostAtRelease(name, owner, distlock.TakenOver)
			}
			out.Results[i].Status = api.StatusHeldByOther
		default:
			if err := s.releasedAsOther(ctx, name, owner, engine.Mutex); err != nil {
				reason := err.Error()
				if ae := (*engine.ArgumentError)(nil); errors.As(err, &ae) {
					reason = ae.Reason
				}
				out.Results[i] = api.SetReleaseResult{Status: api.StatusOtherKind, Reason: reason}
				continue
			}
			s.holds.lostAtRelease(name, owner, distlock.Expired)
			out.Results[i].Status = api.StatusMissing
		}
	}
	writeJSON(w, http.StatusOK, out)
}
