package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// Elections (distlock.Client.Campaign over HTTP). An election is a lock
// whose metadata is the leader's value and whose fencing token is the term:
//
//	GET    /v1/elections/{name}            the leader, or 404 no_leader (read)
//	POST   /v1/elections/{name}/campaign   wait to be elected (write)
//	POST   /v1/elections/{name}/proclaim   a new value, same term (write)
//	POST   /v1/elections/{name}/resign     hand over at once (write)
//	GET    /v1/elections/{name}/watch      leader changes, server-sent (read)

// maxElections is how many elections the server remembers for its
// dashboard.
const maxElections = 1000

// electionBook remembers the elections this server has seen a campaign of,
// and since when each term has been known, for the dashboard.
type electionBook struct {
	mu sync.Mutex
	m  map[string]termSeen
}

type termSeen struct {
	term  uint64
	since time.Time
}

func newElectionBook() *electionBook { return &electionBook{m: make(map[string]termSeen)} }

// seen records term as name's current term; it returns since when the
// server has known it.
func (b *electionBook) seen(name string, term uint64) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.m[name]
	if ok && t.term == term {
		return t.since
	}
	if !ok && len(b.m) >= maxElections {
		return time.Now()
	}
	t = termSeen{term: term, since: time.Now()}
	b.m[name] = t
	return t.since
}

// names lists the elections seen, sorted.
func (b *electionBook) names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.m))
	for n := range b.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// electionRoute routes /v1/elections/{name}[/{action}].
func (s *Server) electionRoute(w http.ResponseWriter, r *http.Request, name, action string) {
	named := func(h func(http.ResponseWriter, *http.Request, Role, string)) handlerFunc { return s.named(name, h) }
	switch action {
	case "":
		s.route(w, r, http.MethodGet, RoleRead, named(s.handleLeader))
	case "campaign":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleCampaign))
	case "proclaim":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleProclaim))
	case "resign":
		s.route(w, r, http.MethodPost, RoleWrite, named(s.handleResign))
	case "watch":
		s.route(w, r, http.MethodGet, RoleRead, named(s.handleWatch))
	default:
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such endpoint: /v1/elections/{name}/"+action))
	}
}

// validateValue checks a leader's value (rules.Value).
func validateValue(v string) *apiError { return argErr("value", rules.Value(v)) }

// handleCampaign serves POST /v1/elections/{name}/campaign: an acquire
// with the value as metadata, announced to observers.
func (s *Server) handleCampaign(w http.ResponseWriter, r *http.Request, role Role, name string) {
	var req api.CampaignRequest
	if e := s.decodeOptional(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := validateValue(req.Value); e != nil {
		writeError(w, e)
		return
	}
	s.serveAcquire(w, r, role, name, api.AcquireRequest{Owner: req.Owner, TTLMs: req.TTLMs, WaitMs: req.WaitMs,
		Metadata: req.Value, Announce: true})
}

// proclaimAgain stores the value of a campaign by the owner that leads
// already (a re-entry keeps the stored value), as distlock.Client.Campaign
// does, so the leader's value, its observers' and the campaign's agree; by
// the re-entered grant's token (the term). If that fails, it drops the
// re-entry's hold again and returns the answer.
func (s *Server) proclaimAgain(ctx context.Context, name, owner, value string, term uint64) *apiError {
	ctx, cancel := engineContext(ctx)
	defer cancel()
	var e *apiError
	ms, ok := s.eng.(engine.MetadataSetter)
	st, err := engine.Extended, error(nil)
	if ok {
		st, err = ms.SetMetadata(ctx, engine.MetadataRequest{Name: name, Owner: owner, Metadata: value, Token: term})
	}
	switch {
	case !ok:
		e = newError(http.StatusNotImplemented, api.CodeNotSupported, "campaign: this server's engine cannot change the value of the leader that campaigns again")
	case err != nil:
		e = engineErr("campaign", err)
	case st != engine.Extended:
		return notHeld(name, st)
	default:
		return nil
	}
	_, _ = s.eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner, Token: term})
	return e
}

// checkTermArgs checks a TermRequest's owner and term.
func checkTermArgs(req api.TermRequest) *apiError {
	if e := requireOwner(req.Owner); e != nil {
		return e
	}
	if req.Term == 0 {
		return badRequest("term", "invalid term: must be positive")
	}
	return nil
}

// checkTerm answers whether owner leads name in term; a not_held answer
// when it does not. It only reads: the call that acts names the term as
// its grant's token, so that a term that ended since is refused by the
// engine in the same step as the change.
func (s *Server) checkTerm(ctx context.Context, name string, req api.TermRequest) *apiError {
	info, err := s.eng.Inspect(ctx, name)
	switch {
	case err != nil:
		return engineErr("inspect", err)
	case !info.Held:
		return notHeld(name, engine.Missing)
	case info.Owner != req.Owner:
		return notHeld(name, engine.HeldByOther)
	case info.Token != req.Term:
		return notInTerm(name, req.Term, fmt.Sprintf(" (%d)", info.Token))
	}
	return nil
}

// notInTerm is the not_held answer (held_by_other) to a proclaim or resign
// whose term is not the owner's current one; current describes that one,
// when known.
func notInTerm(name string, term uint64, current string) *apiError {
	e := newError(http.StatusConflict, api.CodeNotHeld, fmt.Sprintf("term %d is not the current term of %q%s", term, name, current))
	e.detail.Status = api.StatusHeldByOther
	return e
}

// termRequest decodes a TermRequest and checks its fields (checkTermArgs,
// then checks); it answers the request itself and returns false when it
// fails.
func (s *Server) termRequest(w http.ResponseWriter, r *http.Request, checks ...func(api.TermRequest) *apiError) (api.TermRequest, bool) {
	var req api.TermRequest
	e := s.decode(w, r, &req)
	for _, check := range append([]func(api.TermRequest) *apiError{checkTermArgs}, checks...) {
		if e == nil {
			e = check(req)
		}
	}
	if e != nil {
		writeError(w, e)
		return req, false
	}
	return req, true
}

// handleProclaim serves POST /v1/elections/{name}/proclaim: one engine
// call, SetMetadata naming the term as the grant's token, so the engine
// checks owner and term in the same step as the write (no Inspect first:
// a term that ended between the two would have been written over). Where
// the engine does not check grant tokens (a quorum), the owner alone is.
func (s *Server) handleProclaim(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	req, ok := s.termRequest(w, r, proclaimedValue)
	if !ok {
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	s.setMetadata(ctx, w, "proclaim", engine.MetadataRequest{Name: name, Owner: req.Owner, Metadata: req.Value, Token: req.Term},
		func(name string, st engine.ExtendStatus) *apiError {
			if st == engine.HeldByOther {
				return notInTerm(name, req.Term, ": another owner, or that owner under a newer term, leads now")
			}
			return notHeld(name, st)
		})
}

// proclaimedValue checks the value a proclaim stores (validateValue).
func proclaimedValue(req api.TermRequest) *apiError { return validateValue(req.Value) }

// handleResign serves POST /v1/elections/{name}/resign: the term is
// checked (checkTerm) and then named by the release as its grant's token,
// so a term that ended in between (the owner elected again under a newer
// one) is refused by the engine and drops nothing.
func (s *Server) handleResign(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	req, ok := s.termRequest(w, r)
	if !ok {
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	if e := s.checkTerm(ctx, name, req); e != nil {
		writeError(w, e)
		return
	}
	res, err := s.eng.Release(ctx, engine.ReleaseRequest{Name: name, Owner: req.Owner, Token: req.Term})
	switch {
	case err != nil:
		writeError(w, engineErr("resign", err))
	case res.Status == engine.NotOwner:
		writeError(w, notInTerm(name, req.Term, ": another owner, or that owner under a newer term, leads now"))
	case res.Status != engine.Released:
		writeError(w, notHeld(name, engine.Missing))
	default:
		s.holds.released(name, req.Owner, res.Remaining)
		writeJSON(w, http.StatusOK, api.ReleaseResponse{Name: name, Remaining: res.Remaining})
	}
}

// leaderInfo renders an election's state.
func (s *Server) leaderInfo(l distlock.Leader, followers int) api.LeaderInfo {
	j := api.LeaderInfo{Name: l.Name, Elected: l.Elected(), Followers: followers}
	if l.Elected() {
		j.Value, j.Term, j.TTLMs = l.Value, l.Term, wire.HolderTTLMs(l.TTL)
		j.SinceMs = s.elections.seen(l.Name, l.Term).UnixMilli()
	}
	return j
}

// handleLeader serves GET /v1/elections/{name}.
func (s *Server) handleLeader(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	info, err := s.eng.Inspect(ctx, name)
	if err != nil {
		writeError(w, engineErr("inspect", err))
		return
	}
	l, err := leaderOf(info)
	if err != nil {
		writeError(w, newError(http.StatusNotFound, api.CodeNoLeader, fmt.Sprintf("nobody leads %q", name)))
		return
	}
	writeJSON(w, http.StatusOK, s.leaderInfo(l, info.Waiters))
}

// leaderOf reads an election's state from its lock (distlock.LeaderOf):
// distlock.ErrNoLeader while nobody leads, or nobody leads yet.
func leaderOf(info engine.Info) (distlock.Leader, error) {
	return distlock.LeaderOf(info.Name, info.Held, info.Token, info.Metadata, info.TTL)
}

// handleWatch serves GET /v1/elections/{name}/watch: the election's state
// at once, then every change (distlock.Client.Observe on the server's
// engine: by notification, coalescing).
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	if s.isStopping() {
		writeError(w, shuttingDown())
		return
	}
	leave, e := s.limits.enter(name)
	if e != nil {
		writeError(w, e)
		return
	}
	defer leave()
	ch, err := s.watcher.Observe(r.Context(), name)
	if err != nil {
		if !errors.Is(err, distlock.ErrClosed) {
			writeError(w, engineErr("watch", err))
		} else {
			writeError(w, shuttingDown())
		}
		return
	}
	stream, ok := startSSE(w)
	if !ok {
		return
	}
	pump(s, r, stream, ch, api.EventLeader, func(l distlock.Leader) string {
		data, _ := json.Marshal(s.leaderInfo(l, 0))
		return string(data)
	})
}

// electionsSnapshot lists the elections seen, for the dashboard, and the
// first error of an election that could not be read (nil when each was):
// such an election is left out, and the error says so, as the locks
// table's does (snapshot.ElectionsError).
func (s *Server) electionsSnapshot(ctx context.Context) ([]api.LeaderInfo, error) {
	out := []api.LeaderInfo{}
	var first error
	for _, name := range s.elections.names() {
		info, err := s.eng.Inspect(ctx, name)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("election %q: %w", name, err)
			}
			continue
		}
		info.Name = name
		l, _ := leaderOf(info) // nobody leads: the name and no term
		out = append(out, s.leaderInfo(l, info.Waiters))
	}
	return out, first
}
