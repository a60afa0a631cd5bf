//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/internal/redistest"
)

// TestStatusShowsTraceApart: a lock whose metadata carries the trace
// context a traced client stored with the grant (distlock.TraceMetadata)
// shows the caller's metadata alone in status, list and their JSON, and
// the traceparent apart (status's "trace:" line, the JSON's traceparent),
// directly and through a distlock server; no record separator is printed.
// Before, the stored string was printed raw, separator and all.
func TestStatusShowsTraceApart(t *testing.T) {
	srv := redistest.Start(t)
	lib := library(t, srv)
	ctx := testCtx(t)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	l, err := lib.Acquire(ctx, "traced", distlock.WithTTL(time.Minute), distlock.WithMetadata(distlock.JoinTraceMetadata("deploy", tp)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	s := serveIn(t, nil, "--redis", srv.URL())
	for via, c := range map[string]cli{"redis": {redis: srv.URL()}, "server": {env: map[string]string{"DISTLOCK_SERVER": s.url}}} {
		r := c.run(t, "status", "traced")
		expect(t, r, 0, "metadata:", "deploy", "trace:", tp)
		list := c.run(t, "list")
		expect(t, list, 0, "traced", "deploy")
		for _, out := range []string{r.stdout, list.stdout} {
			if strings.Contains(out, "\x1e") || strings.Contains(out, "traceparent=") {
				t.Errorf("%s: the stored stamp printed raw:\n%s", via, out)
			}
		}
		var st infoJSON
		r = c.run(t, "status", "--json", "traced")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Metadata != "deploy" || st.Traceparent != tp {
			t.Errorf("%s: status --json: metadata %q, traceparent %q, %v\n%v", via, st.Metadata, st.Traceparent, err, r)
		}
	}
}
