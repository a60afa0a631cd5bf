package server

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Shared locks (engine.Sharer: semaphores and reader-writer locks) share
// the lock endpoints with the mutex, and the name space:
//
//	POST /v1/locks/{name}/acquire   kind, limit, weight, mode in the body
//	POST /v1/locks/{name}/release   shared: true
//	POST /v1/locks/{name}/leave     shared: true
//	POST /v1/extend                 items with shared: true
//	POST /v1/locks/{name}/limit     set a semaphore's stored limit
//	GET  /v1/locks/{name}?kind=shared  the holders (kind=mutex: the mutex;
//	                                   neither: whichever the name is)
//
// An engine's Lister may not list shared locks (the embedded engine does
// not): the server remembers the names it saw a shared acquire for
// (sharedBook), and lists and shows those itself.

// maxSharedNames is how many shared lock names the server remembers for
// its listings and dashboard.
const maxSharedNames = 10000

// sharedBook remembers the shared locks this server has seen an acquire
// of; a name is forgotten once its engine no longer knows the lock.
type sharedBook struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func newSharedBook() *sharedBook { return &sharedBook{m: make(map[string]struct{})} }

// seen records name.
func (b *sharedBook) seen(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) < maxSharedNames {
		b.m[name] = struct{}{}
	}
}

// forget drops name.
func (b *sharedBook) forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, name)
}

// names lists the names seen that start with prefix and fall after cursor
// and up to last ("" for no bound), sorted.
func (b *sharedBook) names(prefix, cursor, last string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for n := range b.m {
		if strings.HasPrefix(n, prefix) && n > cursor && (last == "" || n <= last) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// sharedSpec is a shared acquire's kind, limit and weight.
type sharedSpec struct {
	kind          engine.SharedKind
	limit, weight int
}

// sharedFrom reads the shared-lock fields of an acquire: nil for a mutex.
func sharedFrom(req api.AcquireRequest) (*sharedSpec, *apiError) {
	switch req.Kind {
	case "", api.KindMutex:
		switch {
		case req.Limit != 0:
			return nil, badRequest("limit", "invalid limit: a limit is for kind semaphore")
		case req.Weight != 0:
			return nil, badRequest("weight", "invalid weight: a weight is for kind semaphore")
		case req.Mode != "":
			return nil, badRequest("mode", "invalid mode: a mode is for kind rwlock")
		}
		return nil, nil
	case api.KindSemaphore:
		sh := &sharedSpec{kind: engine.Semaphore, limit: req.Limit, weight: max(req.Weight, 1)}
		switch {
		case req.Limit < 1 || req.Limit >= engine.RWPermits:
			return nil, badRequest("limit", fmt.Sprintf("invalid limit: %d is not between 1 and %d", req.Limit, engine.RWPermits-1))
		case req.Weight < 0 || sh.weight > req.Limit:
			return nil, badRequest("weight", fmt.Sprintf("invalid weight: %d is not between 1 and the limit %d", req.Weight, req.Limit))
		case req.Mode != "":
			return nil, badRequest("mode", "invalid mode: a mode is for kind rwlock")
		}
		return sh, nil
	case api.KindRWLock:
		sh := &sharedSpec{kind: engine.RWLock, limit: engine.RWPermits, weight: 1}
		switch {
		case req.Limit != 0:
			return nil, badRequest("limit", "invalid limit: a limit is for kind semaphore")
		case req.Weight != 0:
			return nil, badRequest("weight", "invalid weight: a reader-writer lock takes a mode (read or write), not a weight")
		case req.Mode == api.ModeWrite:
			sh.weight = engine.RWPermits
		case req.Mode != "" && req.Mode != api.ModeRead:
			return nil, badRequest("mode", fmt.Sprintf("invalid mode: %q is not read or write", req.Mode))
		}
		return sh, nil
	}
	return nil, badRequest("kind", fmt.Sprintf("invalid kind: %q is not mutex, semaphore or rwlock", req.Kind))
}

// sharer returns the server's engine as an engine.Sharer, or the
// not_supported answer for op.
func (s *Server) sharer(op string) (engine.Sharer, *apiError) {
	sh, ok := s.eng.(engine.Sharer)
	if !ok {
		return nil, newError(http.StatusNotImplemented, api.CodeNotSupported, op+": this server's engine keeps no shared locks (semaphores, reader-writer locks)")
	}
	return sh, nil
}

// sharedQueue is a shared lock's queue as the wait loop sees it: the
// engine's waiter subscriptions, and its LeaveShared.
type sharedQueue struct {
	engine.Queuer
	s engine.Sharer
}

// Leave implements engine.Queuer.
func (q sharedQueue) Leave(ctx context.Context, name, waiter string) error {
	return q.s.LeaveShared(ctx, name, waiter)
}

// handleSetLimit serves POST /v1/locks/{name}/limit (engine.Sharer.SetLimit).
func (s *Server) handleSetLimit(w http.ResponseWriter, r *http.Request, _ Role, name string) {
	var req api.LimitRequest
	if e := s.decode(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if req.Limit < 1 || req.Limit >= engine.RWPermits {
		writeError(w, badRequest("limit", fmt.Sprintf("invalid limit: %d is not between 1 and %d", req.Limit, engine.RWPermits-1)))
		return
	}
	sh, e := s.sharer("limit")
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, cancel := engineContext(r.Context())
	defer cancel()
	prev, err := sh.SetLimit(ctx, name, req.Limit)
	if err != nil {
		writeError(w, engineErr("limit", err))
		return
	}
	s.shared.seen(name)
	s.obs.changed()
	writeJSON(w, http.StatusOK, api.LimitResponse{Name: name, Limit: req.Limit, Previous: prev})
}

// inspectAny answers GET /v1/locks/{name}: kind "mutex" inspects the
// mutex, "shared" the shared lock, and "" whichever the name is (the
// mutex unless a shared lock of the name exists).
func (s *Server) inspectAny(ctx context.Context, name, kind string) (engine.Info, *apiError) {
	var info engine.Info
	if kind != "shared" {
		var err error
		if info, err = s.eng.Inspect(ctx, name); err != nil {
			return info, engineErr("inspect", err)
		}
		if kind == api.KindMutex || info.Held {
			return info, nil
		}
	}
	sh, ok := s.eng.(engine.Sharer)
	if !ok {
		if kind == "shared" {
			_, e := s.sharer("inspect")
			return info, e
		}
		return info, nil
	}
	si, err := sh.InspectShared(ctx, name)
	if err != nil {
		return info, engineErr("inspect", err)
	}
	if kind == "" && si.Kind == 0 {
		return info, nil
	}
	si.Name = name
	return si, nil
}

// withShared adds to a listing page the shared locks this server has seen
// (sharedBook) whose names fall in the page (after cursor, up to next; to
// the end on the last page) and that are held or waited for, unless the
// engine listed them already. Names the engine forgot are dropped from the
// book.
func (s *Server) withShared(ctx context.Context, infos []engine.Info, prefix, cursor, next string) []engine.Info {
	sh, ok := s.eng.(engine.Sharer)
	if !ok {
		return infos
	}
	listed := make(map[string]bool, len(infos))
	for _, i := range infos {
		listed[i.Name] = true
	}
	added := false
	for _, name := range s.shared.names(prefix, cursor, next) {
		if listed[name] {
			continue
		}
		si, err := sh.InspectShared(ctx, name)
		switch {
		case err != nil:
			continue
		case si.Kind == 0:
			s.shared.forget(name)
			continue
		case !si.Held && si.Waiters == 0:
			continue
		}
		si.Name = name
		infos = append(infos, si)
		added = true
	}
	if added {
		sort.SliceStable(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	}
	return infos
}

// kindName is a shared kind's wire name.
func kindName(k engine.SharedKind) string {
	switch k {
	case engine.Semaphore:
		return api.KindSemaphore
	case engine.RWLock:
		return api.KindRWLock
	}
	return ""
}

// modeOf is the side of a reader-writer lock's holder of weight.
func modeOf(weight int) string {
	if weight >= engine.RWPermits {
		return api.ModeWrite
	}
	return api.ModeRead
}

// sharedLockInfo renders a shared lock's state for a caller with role:
// owner tokens only for admins.
func sharedLockInfo(i engine.Info, role Role) api.LockInfo {
	j := api.LockInfo{Name: i.Name, Held: i.Held, HighWater: i.HighWater, Waiters: i.Waiters, Kind: kindName(i.Kind), Token: i.Token}
	if i.Kind == engine.Semaphore {
		j.Limit = i.Limit
	}
	for _, h := range i.Holders {
		hi := api.HolderInfo{HolderID: holderID(h.Owner), Weight: h.Weight, Count: h.Count, Token: h.Token,
			TTLMs: holderTTLms(h.TTL), Metadata: h.Metadata}
		if role >= RoleAdmin {
			hi.Owner = h.Owner
		}
		if i.Kind == engine.RWLock {
			hi.Mode = modeOf(h.Weight)
			if j.Mode != api.ModeWrite {
				j.Mode = hi.Mode
			}
		}
		j.Holders = append(j.Holders, hi)
	}
	return j
}
