package zookeeper_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestOpen: engine.Open takes zookeeper:// URLs (the root and session
// timeout as parameters) and refuses a path, a user or an unknown
// parameter with ErrBadURL.
func TestOpen(t *testing.T) {
	t.Parallel()
	ens := shared(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := engine.Open(ctx, "zookeeper://"+strings.Join(ens.Servers(), ",")+"?root=/opened&session_timeout=20s")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if info, err := e.Inspect(ctx, "opened"); err != nil || info.Held {
		t.Fatalf("Inspect on an opened engine: %+v, %v", info, err)
	}
	for _, bad := range []string{"zookeeper://h:2181/path", "zookeeper://u:p@h:2181", "zookeeper://h:2181?nope=1"} {
		if _, err := engine.Open(ctx, bad); !errors.Is(err, engine.ErrBadURL) {
			t.Errorf("Open(%q): %v, want ErrBadURL", bad, err)
		}
	}
}
