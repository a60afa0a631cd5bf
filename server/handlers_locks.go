package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// handleAcquire serves POST /v1/locks/{name}/acquire.
func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request, role Role, name string) {
	var req api.AcquireRequest
	if e := s.decodeOptional(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	s.serveAcquire(w, r, role, name, req)
}

// serveAcquire answers an acquire (or an election's campaign) once its
// body is decoded.
func (s *Server) serveAcquire(w http.ResponseWriter, r *http.Request, role Role, name string, req api.AcquireRequest) {
	args, e := s.checkAcquire(req)
	if e != nil {
		writeError(w, e)
		return
	}
	ttl, wait, waiterTTL, sh := args.ttl, args.wait, args.waiterTTL, args.sh
	if _, queues := s.eng.(engine.Queuer); sh == nil && args.order == engine.OrderFair && !(queues && engine.CapabilitiesOf(s.eng).Fair) {
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "fair: this server's engine keeps no waiter queue"))
		return
	}
	// A server-made owner or attempt is this request's own: a grant made
	// for it after the client left is released at once. With the client's
	// own owner and attempt (the remote engine), the client cleans up.
	minted := req.Owner == "" || req.Attempt == ""
	owner := req.Owner
	if owner == "" {
		owner = s.owners.Next()
	}
	attempt := req.Attempt
	if attempt == "" {
		attempt = s.owners.Next()
	}
	ereq := engine.AcquireRequest{Name: name, Owner: owner, TTL: ttl, Metadata: req.Metadata, Attempt: attempt,
		Waiting: req.Waiting || wait > 0, Waiter: req.Waiter, WaiterTTL: waiterTTL, Order: args.order,
		OneOff: req.OneOff && req.Owner != "" && req.Attempt == req.Owner, Announce: req.Announce}
	if sh != nil {
		ereq.Kind, ereq.Limit, ereq.Weight = sh.kind, sh.limit, sh.weight
	}
	o := s.acquire(r.Context(), acquireCall{req: ereq, budget: wait, shared: sh, minted: minted})
	// A grant for a client that has gone: its close may be in the socket
	// before the request's context is cancelled (a server stopped and
	// continued wakes with both: its wait can be granted first).
	if o.err == nil && !o.gone && o.grant.Acquired && clientGone(r) {
		o.gone = true
		if o.failure = context.Cause(r.Context()); o.failure == nil {
			o.failure = context.Canceled
		}
	}
	if o.grant.Acquired && !(o.gone && minted) {
		s.waitEndedGranted(name, owner, o.waiter, ttl)
	}
	switch {
	case o.gone:
		if o.grant.Acquired && minted {
			s.undoGrant(r.Context(), ereq, o.waiter)
		}
		s.obs.AcquireFailed(name, o.waited, o.failure)
		return // nobody to answer
	case o.err != nil:
		if role < RoleAdmin {
			o.err.detail.Holder = ""
		}
		s.obs.AcquireFailed(name, o.waited, o.failure)
		writeError(w, o.err)
		return
	}
	if req.Announce && o.grant.Count > 1 {
		if e := s.proclaimAgain(r.Context(), name, owner, req.Metadata, o.grant.Token); e != nil {
			writeError(w, e)
			return
		}
	}
	s.holds.granted(name, owner, o.grant.Token, o.grant.Count, ttl, o.waited, o.contended)
	if req.Announce {
		s.elections.seen(name, o.grant.Token)
	}
	writeJSON(w, http.StatusOK, acquireResponse(name, owner, ttl, o, sh))
}

// acquireArgs are an acquire request's checked arguments.
type acquireArgs struct {
	ttl, wait, waiterTTL time.Duration
	order                engine.Order
	sh                   *sharedSpec // nil for a mutex
}

// checkAcquire checks an acquire request's arguments, the first error
// found being the answer.
func (s *Server) checkAcquire(req api.AcquireRequest) (acquireArgs, *apiError) {
	ttl, e := s.ttlFrom(req.TTLMs)
	if e == nil {
		e = firstErr(validateOwner(req.Owner), validateMetadata(req.Metadata), validateAttempt(req.Attempt))
	}
	var wait, waiterTTL time.Duration
	if e == nil {
		wait, e = s.waitFrom(req.WaitMs)
	}
	if e == nil {
		waiterTTL, e = waiterTTLFrom(req.WaiterTTLMs)
	}
	if e == nil {
		e = validateWaiter(req.Waiter)
	}
	if e == nil && req.Waiter != "" && wait > 0 {
		e = badRequest("waiter", "invalid waiter: a request with wait_ms waits on the server, which queues it itself")
	}
	var order engine.Order
	if e == nil {
		var err error
		order, err = wire.OrderOf(req)
		e = argErr("no_reserve", err)
	}
	var sh *sharedSpec
	if e == nil {
		sh, e = sharedFrom(req)
	}
	if e == nil && sh != nil && req.Announce {
		e = badRequest("announce", "invalid announce: an election is a mutex, not a "+req.Kind)
	}
	if e == nil && sh != nil {
		_, e = s.sharer("acquire")
	}
	return acquireArgs{ttl: ttl, wait: wait, waiterTTL: waiterTTL, order: order, sh: sh}, e
}

// acquireResponse is the answer to a granted acquire.
func acquireResponse(name, owner string, ttl time.Duration, o acquireOutcome, sh *sharedSpec) api.AcquireResponse {
	resp := api.AcquireResponse{
		Name: name, Owner: owner, Token: o.grant.Token, Count: o.grant.Count,
		TTLMs: ttl.Milliseconds(), WaitedMs: o.waited.Milliseconds(),
	}
	if sh != nil {
		resp.Kind, resp.Weight = wire.KindName(sh.kind), sh.weight
		if sh.kind == engine.RWLock {
			resp.Mode = wire.ModeOf(sh.weight)
		}
	}
	return resp
}

// handleExtend serves POST /v1/locks/{name}/extend.
func (s *Server) handleExtend(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.ExtendRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Name != "" && req.Name != name {
		writeError(w, badRequest("name", "invalid name: the body names another lock than the path"))
		return
	}
	ttl, e := s.ttlFrom(req.TTLMs)
	if e == nil {
		e = requireOwner(req.Owner)
	}
	if e == nil && req.Waiter {
		e = badRequest("waiter", "invalid waiter: heartbeats go to POST /v1/extend")
	}
	if e == nil && req.Shared {
		_, e = s.sharer("extend")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	res, err := s.eng.Extend(ctx, []engine.ExtendRequest{wire.Extend(name, req, ttl)})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("engine answered %d results for 1 extension", len(res))
	}
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		s.obs.Renewed(name, false)
		writeError(w, engineErr("extend", err))
		return
	}
	if res[0].Status != engine.Extended {
		if err := s.extendedAsOther(ctx, name, req.Owner, req.Shared); err != nil {
			writeError(w, engineErr("extend", err))
			return
		}
	}
	s.trackExtend(wire.Extend(name, req, ttl), res[0])
	if res[0].Status != engine.Extended {
		writeError(w, notHeld(name, res[0].Status))
		return
	}
	writeJSON(w, http.StatusOK, api.ExtendResponse{Name: name, Owner: req.Owner, Token: res[0].Token, TTLMs: ttl.Milliseconds()})
}

// handleExtendBatch serves POST /v1/extend: every lock in one engine round
// trip (the remote engine's watchdog renews all its leases this way).
func (s *Server) handleExtendBatch(w http.ResponseWriter, r *http.Request, _ Role) {
	var req api.ExtendBatchRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Locks) > MaxExtendBatch {
		writeError(w, badRequest("locks", fmt.Sprintf("invalid locks: %d extensions in one batch, at most %d", len(req.Locks), MaxExtendBatch)))
		return
	}
	rs := make([]engine.ExtendRequest, len(req.Locks))
	for i, l := range req.Locks {
		ttl, e := s.ttlFrom(l.TTLMs)
		if l.Waiter {
			ttl, e = waiterTTLFrom(l.TTLMs)
		}
		e = firstErr(s.validateName(l.Name), e, requireOwner(l.Owner))
		if e != nil {
			writeError(w, itemErr("locks", i, e))
			return
		}
		rs[i] = wire.Extend(l.Name, l, ttl)
	}
	out := api.ExtendBatchResponse{Results: make([]api.ExtendResult, len(rs))}
	if len(rs) == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	res, err := s.extend(ctx, rs)
	if err != nil {
		for _, q := range rs {
			s.obs.Renewed(q.Name, false)
		}
		writeError(w, engineErr("extend", err))
		return
	}
	for i, x := range res {
		if x.Err != nil {
			if !rs[i].Waiter {
				s.obs.Renewed(rs[i].Name, false)
			}
			e := engineErr("extend", x.Err)
			if e.detail.Arg != "" {
				e = itemErr("locks", i, e) // the item's field, as a refusal of the batch names it
			}
			out.Results[i].Error = &e.detail
			continue
		}
		out.Results[i].Status = extendStatus(x.Status)
		if rs[i].Waiter {
			out.Results[i].Wake = x.Wake
			continue
		}
		s.trackExtend(rs[i], x)
		if x.Status == engine.Extended {
			out.Results[i].Token = x.Token
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// extend runs a batch of extensions and waiter heartbeats on the engine in
// one round trip. On an engine without a queue, heartbeats are answered
// missing without asking it (it would take them for lock extensions), and
// so are a shared lock's items on an engine that keeps none.
func (s *Server) extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	_, queues := s.eng.(engine.Queuer)
	_, shares := s.eng.(engine.Sharer)
	all := true
	for _, r := range rs {
		if r.Waiter && !queues || r.Kind.Shared() && !shares {
			all = false
		}
	}
	send, at := rs, []int(nil)
	if !all {
		send = nil
		for i, r := range rs {
			if !(r.Waiter && !queues || r.Kind.Shared() && !shares) {
				send = append(send, r)
				at = append(at, i)
			}
		}
	}
	var res []engine.ExtendResult
	var err error
	if len(send) > 0 {
		res, err = s.eng.Extend(ctx, send)
	}
	if err == nil && len(res) != len(send) {
		err = fmt.Errorf("engine answered %d results for %d extensions", len(res), len(send))
	}
	if err != nil || all {
		return res, err
	}
	out := make([]engine.ExtendResult, len(rs))
	for i := range out {
		out[i].Status = engine.Missing
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return out, nil
}

// handleLeave serves POST /v1/locks/{name}/leave: a waiter leaves the
// lock's queue, of the kind the body says (wire.Leave); nothing to do on
// an engine without a queue, not_supported for a shared lock's waiter on
// one that keeps no shared locks (engine.UnsupportedKind).
func (s *Server) handleLeave(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.LeaveRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := requireWaiter(req.Waiter); e != nil {
		writeError(w, e)
		return
	}
	if q, ok := s.eng.(engine.Queuer); ok {
		ctx, cancel := engineContext(r.Context())
		defer cancel()
		if err := q.Leave(ctx, wire.Leave(name, req)); err != nil {
			writeError(w, engineErr("leave", err))
			return
		}
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// trackExtend reports extension r's answer res to the metrics. A renewal
// of a freed grant whose owner holds a newer one (res answers that grant's
// token, engine.ExtendRequest.Token) counts the old lease's loss and keeps
// the hold tracked, for it is the newer grant's.
func (s *Server) trackExtend(r engine.ExtendRequest, res engine.ExtendResult) {
	switch {
	case res.Status == engine.Extended:
		s.holds.extended(r.Name, r.Owner, r.TTL)
	case res.Status == engine.HeldByOther && r.Token != 0 && res.Token != 0 && res.Token != r.Token:
		s.obs.Renewed(r.Name, false)
		s.holds.lostOldGrant()
	case res.Status == engine.HeldByOther:
		s.holds.lostAtRenewal(r.Name, r.Owner, distlock.TakenOver)
	default:
		s.holds.lostAtRenewal(r.Name, r.Owner, distlock.Expired)
	}
}

// handleRelease serves POST /v1/locks/{name}/release.
func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.ReleaseRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	e := requireOwner(req.Owner)
	ereq, err := wire.Release(name, req)
	if e == nil && err != nil {
		e = engineErr("release", err)
	}
	if e == nil && ereq.Kind.Shared() {
		_, e = s.sharer("release")
	}
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	if req.Shared && req.Kind == "" {
		// A client before the kind field asks for a shared lock's hold,
		// whichever its kind: the engines release only a hold of the kind
		// asked, so the hold's own kind is asked.
		if info, ok := s.ownerHolds(ctx, name, req.Owner); ok && info.Kind.Shared() {
			ereq.Kind = info.Kind
		}
	}
	res, err := s.release(ctx, ereq, req.ReleaseID)
	if err != nil {
		writeError(w, engineErr("release", err))
		return
	}
	if ereq.Undo {
		s.leaveEndedWait(ctx, ereq)
	}
	switch res.Status {
	case engine.Released:
		s.holds.released(name, req.Owner, res.Remaining)
		writeJSON(w, http.StatusOK, api.ReleaseResponse{Name: name, Remaining: res.Remaining})
	case engine.NotOwner:
		if ereq.Undo {
			// A client's take-back of a grant it never heard of: no
			// lease was lost (holdTracker.undone).
			s.holds.undone(name, req.Owner)
		} else if s.newerGrant(ctx, name, req.Owner, ereq.Token) {
			// The release of a freed grant whose owner holds a newer one
			// (engine.ReleaseRequest.Token): that hold stays tracked.
			s.holds.lostOldGrant()
		} else {
			s.holds.lostAtRelease(name, req.Owner, distlock.TakenOver)
		}
		writeError(w, notHeld(name, engine.HeldByOther))
	default:
		if err := s.releasedAsOther(ctx, name, req.Owner, ereq.Kind); err != nil {
			writeError(w, engineErr("release", err))
			return
		}
		if ereq.Undo {
			s.holds.undone(name, req.Owner)
		} else {
			s.holds.lostAtRelease(name, req.Owner, distlock.Expired)
		}
		writeError(w, notHeld(name, engine.Missing))
	}
}

// release is the engine's release of r; with an id (not ""), its
// ReleaseOnce (api.ReleaseRequest.ReleaseID), or errors.ErrUnsupported
// when the engine has none.
func (s *Server) release(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	switch {
	case id == "":
		return s.eng.Release(ctx, r)
	case s.once == nil:
		return engine.ReleaseResult{}, fmt.Errorf("the server's engine cannot release once: %w", errors.ErrUnsupported)
	}
	return s.once.ReleaseOnce(ctx, r, id)
}

// handleMetadata serves POST /v1/locks/{name}/metadata
// (engine.MetadataSetter).
func (s *Server) handleMetadata(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.MetadataRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := firstErr(requireOwner(req.Owner), validateMetadata(req.Metadata)); e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	s.setMetadata(ctx, w, "metadata", engine.MetadataRequest{Name: name, Owner: req.Owner, Metadata: req.Metadata, Token: req.Token}, notHeld)
}

// setMetadata sets a held lock's metadata (engine.MetadataSetter: the
// owner's hold, of the grant of r.Token when not 0, checked by the engine
// in the same step as the write) and answers; op names the request in
// errors, refused the answer when the owner does not hold it.
func (s *Server) setMetadata(ctx context.Context, w http.ResponseWriter, op string, r engine.MetadataRequest,
	refused func(name string, st engine.ExtendStatus) *apiError) {
	ms, ok := s.eng.(engine.MetadataSetter)
	if !ok {
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, op+": this server's engine cannot change a lock's metadata in place"))
		return
	}
	st, err := ms.SetMetadata(ctx, r)
	switch {
	case err != nil:
		writeError(w, engineErr(op, err))
	case st != engine.Extended:
		writeError(w, refused(r.Name, st))
	default:
		writeJSON(w, http.StatusOK, api.MetadataResponse{Name: r.Name, Metadata: r.Metadata})
	}
}

// handleFence serves POST /v1/locks/{name}/fence (engine.FenceRaiser,
// the kind from the body's shared flag: wire.Raise). A
// raise the engine refuses (engine.CheckRaise: below the holder's token,
// above 2^53-1, too far ahead of the clock) is a 400 invalid_argument and
// changes nothing.
func (s *Server) handleFence(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.FenceRequest
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	e := requireOwner(req.Owner)
	switch {
	case e != nil:
	case req.Token == 0:
		e = badRequest("token", "invalid token: must be positive")
	case req.Token > engine.MaxToken:
		e = engineErr("fence", engine.RaiseAboveMaxError(req.Token))
	}
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	fr, ok := s.eng.(engine.FenceRaiser)
	if !ok {
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "this server's engine cannot raise fences"))
		return
	}
	ok, err := fr.RaiseFence(ctx, wire.Raise(name, req))
	if err != nil {
		writeError(w, engineErr("fence", err))
		return
	}
	writeJSON(w, http.StatusOK, api.FenceResponse{Raised: ok})
}

// handleStatus serves GET /v1/locks/{name}[?kind=mutex|shared].
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request, role Role, name string) {
	kind := r.URL.Query().Get("kind")
	if kind != "" && kind != api.KindMutex && kind != "shared" {
		writeError(w, badRequest("kind", fmt.Sprintf("invalid kind: %q is not mutex or shared", kind)))
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	info, e := s.inspectAny(ctx, name, kind)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, lockInfo(info, role))
}

// handleForceRelease serves DELETE /v1/locks/{name}[?owner=OWNER] (admin):
// every holder, or only OWNER's hold (409 not_held when OWNER holds
// nothing: nothing changed).
func (s *Server) handleForceRelease(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	q := r.URL.Query()
	owner, one := q.Get("owner"), q.Has("owner")
	if one {
		if e := requireOwner(owner); e != nil {
			writeError(w, e)
			return
		}
	}
	if s.refuseGone(r) {
		writeError(w, goneError()) // see clientgone.go: it could free a holder granted since
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	var held bool
	var err error
	switch fr, hr := s.eng.(engine.ForceReleaser); {
	case one:
		h, ok := s.eng.(engine.HolderReleaser)
		if !ok {
			writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "this server's engine cannot force-release one holder"))
			return
		}
		held, err = h.ForceReleaseHolder(ctx, name, owner)
	case !hr:
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "this server's engine cannot force-release"))
		return
	default:
		held, err = fr.ForceRelease(ctx, name)
	}
	if err != nil {
		writeError(w, engineErr("force-release", err))
		return
	}
	if one && !held {
		e := notHeld(name, s.heldByOther(ctx, name))
		e.detail.Message = fmt.Sprintf("%q holds nothing of %q: nothing was released", owner, name)
		writeError(w, e)
		return
	}
	s.log.Info("distlock: lock force-released", "name", name, "owner", owner, "was_held", held, "remote", r.RemoteAddr)
	if held {
		s.holds.forced(name, owner) // owner is "" unless one
	}
	s.obs.changed()
	writeJSON(w, http.StatusOK, api.ForceReleaseResponse{Name: name, Owner: owner, WasHeld: held})
}

// heldByOther is the not_held status of an owner that holds nothing of
// name (ForceReleaseHolder's refusal): held_by_other while another owner
// holds it, missing when nobody does (or Inspect fails: the refusal
// stands either way).
func (s *Server) heldByOther(ctx context.Context, name string) engine.ExtendStatus {
	if info, err := s.eng.Inspect(ctx, name); err == nil && info.Held {
		return engine.HeldByOther
	}
	return engine.Missing
}

// notHeld answers a request about a lock its owner does not hold.
func notHeld(name string, st engine.ExtendStatus) *apiError {
	msg := fmt.Sprintf("%q is not held by that owner: it expired or was released", name)
	if st == engine.HeldByOther {
		msg = fmt.Sprintf("%q is not held by that owner: another owner holds it now", name)
	}
	e := newError(http.StatusConflict, api.CodeNotHeld, msg)
	e.detail.Status = extendStatus(st)
	return e
}

func extendStatus(st engine.ExtendStatus) string {
	switch st {
	case engine.Extended:
		return api.StatusExtended
	case engine.HeldByOther:
		return api.StatusHeldByOther
	}
	return api.StatusMissing
}

// lockInfo renders a lock's state, of any kind, for a caller with role:
// owner tokens only for admins (wire.LockInfo).
func lockInfo(i engine.Info, role Role) api.LockInfo {
	return wire.LockInfo(i, role >= RoleAdmin)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...*apiError) *apiError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
