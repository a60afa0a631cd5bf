package server

import (
	"context"
	"embed"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// The dashboard: a single page (dashboard/index.html, app.js, style.css,
// embedded, no build step) that lists the live locks and charts
// acquisitions, waits and losses. It reads GET /v1/dashboard/events, a
// stream of snapshots that one goroutine builds for every viewer, once a
// second and soon after a change, and only while someone watches.

//go:embed dashboard/index.html dashboard/app.js dashboard/style.css
var dashboardFiles embed.FS

// Dashboard tunables.
const (
	dashboardEvery    = time.Second
	dashboardMinGap   = 150 * time.Millisecond // between snapshots after changes
	dashboardMaxLocks = 200                    // locks per snapshot
)

// handleStatic serves the dashboard's files.
func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request, path string) {
	file, ctype := "", ""
	switch path {
	case "/", "/index.html":
		file, ctype = "dashboard/index.html", "text/html; charset=utf-8"
	case "/app.js":
		file, ctype = "dashboard/app.js", "text/javascript; charset=utf-8"
	case "/style.css":
		file, ctype = "dashboard/style.css", "text/css; charset=utf-8"
	default:
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "no such page: "+path))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		writeError(w, newError(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, r.Method+" is not allowed here; use GET"))
		return
	}
	if e := knownParams(r); e != nil {
		writeError(w, e)
		return
	}
	data, err := dashboardFiles.ReadFile(file)
	if err != nil {
		writeError(w, newError(http.StatusInternalServerError, api.CodeNotFound, err.Error()))
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	_, _ = w.Write(data)
}

// snapshot is one event of the dashboard stream.
type snapshot struct {
	Engine    string           `json:"engine"`
	Embedded  bool             `json:"embedded"`
	Version   string           `json:"version"`
	NowMs     int64            `json:"now_ms"`
	Locks     []api.LockInfo   `json:"locks"`
	Elections []api.LeaderInfo `json:"elections"`
	Truncated bool             `json:"truncated,omitempty"`
	WaitFor   *api.WaitFor     `json:"waitfor,omitempty"`
	ListError string           `json:"list_error,omitempty"`
	// ElectionsError says why elections are missing from Elections (the
	// first election whose state could not be read), as ListError does
	// for the locks.
	ElectionsError string       `json:"elections_error,omitempty"`
	Waiting        int          `json:"waiting"`
	Holders        int          `json:"holders"`
	Timeline       timelineJSON `json:"timeline"`
}

// dashboardHub builds snapshots while someone watches and hands them to
// every viewer.
type dashboardHub struct {
	s    *Server
	max  int
	kick chan struct{}

	mu      sync.Mutex
	viewers map[chan []byte]struct{}
	running bool
	stopped bool
}

func newDashboardHub(s *Server, max int) *dashboardHub {
	return &dashboardHub{s: s, max: max, kick: make(chan struct{}, 1), viewers: make(map[chan []byte]struct{})}
}

// changed asks for a snapshot soon.
func (h *dashboardHub) changed() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// join adds a viewer; it gets the latest snapshot on its channel.
func (h *dashboardHub) join() (chan []byte, func(), *apiError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, nil, shuttingDown()
	}
	if len(h.viewers) >= h.max {
		return nil, nil, tooManyWaiters("too many dashboards are open on this server")
	}
	ch := make(chan []byte, 1)
	h.viewers[ch] = struct{}{}
	if !h.running {
		h.running = true
		h.s.bg.Add(1)
		go h.loop()
	}
	h.changed()
	return ch, func() {
		h.mu.Lock()
		delete(h.viewers, ch)
		h.mu.Unlock()
	}, nil
}

// stop ends the loop and refuses new viewers.
func (h *dashboardHub) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
}

// loop builds and sends snapshots until nobody watches or the server stops.
func (h *dashboardHub) loop() {
	defer h.s.bg.Done()
	tick := time.NewTicker(dashboardEvery)
	defer tick.Stop()
	for {
		select {
		case <-h.s.bgStop:
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
			return
		case <-tick.C:
		case <-h.kick:
		}
		h.mu.Lock()
		if len(h.viewers) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		data := h.build()
		h.mu.Lock()
		for ch := range h.viewers {
			select { // keep only the latest snapshot
			case <-ch:
			default:
			}
			ch <- data
		}
		h.mu.Unlock()
		select {
		case <-time.After(dashboardMinGap):
		case <-h.s.bgStop:
		}
	}
}

// build makes one snapshot, in JSON.
func (h *dashboardHub) build() []byte {
	s := h.s
	snap := snapshot{
		Engine: s.engineName, Embedded: s.embedded, Version: Version,
		NowMs: time.Now().UnixMilli(), Locks: []api.LockInfo{},
		Waiting: s.limits.waiting(), Holders: s.holds.count(), Timeline: s.timeline.snapshot(),
	}
	if lister, ok := s.eng.(engine.Lister); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		infos, truncated, err := listSome(ctx, lister, dashboardMaxLocks)
		if err != nil {
			snap.ListError = err.Error()
		}
		cancel()
		for _, i := range infos {
			snap.Locks = append(snap.Locks, lockInfo(i, RoleRead))
		}
		wf := waitFor(infos, RoleRead)
		snap.Truncated, snap.WaitFor = truncated, &wf
	} else {
		snap.ListError = "this engine cannot list locks"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	elections, err := s.electionsSnapshot(ctx)
	cancel()
	snap.Elections = elections
	if err != nil {
		snap.ElectionsError = err.Error()
	}
	data, _ := json.Marshal(snap)
	return data
}

// listSome lists up to max locks, sorted by name. A partial listing (some
// parts of the engine did not answer) is returned with its
// *engine.PartialError.
func listSome(ctx context.Context, l engine.Lister, max int) ([]engine.Info, bool, error) {
	byName := map[string]engine.Info{}
	cursor := ""
	truncated := false
	var partial error
	for {
		infos, next, err := l.List(ctx, "", cursor, max)
		if p, ok := engine.AsPartial(err); ok {
			partial, err = p, nil // the page of the parts that answered
		}
		if err != nil {
			return nil, false, err
		}
		for _, i := range infos {
			byName[i.Name] = i
		}
		if next == "" {
			break
		}
		if len(byName) >= max {
			truncated = true
			break
		}
		cursor = next
	}
	out := make([]engine.Info, 0, len(byName))
	for _, i := range byName {
		out = append(out, i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) > max {
		out, truncated = out[:max], true
	}
	return out, truncated, partial
}

// handleDashboardEvents serves GET /v1/dashboard/events: a snapshot event
// about once a second, and soon after each change seen by this server.
func (s *Server) handleDashboardEvents(w http.ResponseWriter, r *http.Request, _ Role) {
	if s.isStopping() {
		writeError(w, shuttingDown())
		return
	}
	ch, leave, e := s.dash.join()
	if e != nil {
		writeError(w, e)
		return
	}
	defer leave()
	stream, ok := startSSE(w)
	if !ok {
		return
	}
	pump(s, r, stream, ch, "snapshot", func(data []byte) string { return string(data) })
}
