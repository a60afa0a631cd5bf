package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/distlock/distlock/engine"
	_ "github.com/distlock/distlock/engine/postgres"
)

// TestOpenBadURL: PostgreSQL URLs that cannot be used are typed errors,
// made before any connection. (The CLI's PostgreSQL tests open
// postgres://...?schema= on a real server.)
func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{"postgres://u@127.0.0.1:1/db?listen=maybe", "postgresql://u@127.0.0.1:1/db?sslmode=bogus"} {
		eng, err := engine.Open(context.Background(), u)
		if err == nil {
			_ = eng.Close()
		}
		if !errors.Is(err, engine.ErrBadURL) {
			t.Errorf("Open(%q) = %v, want ErrBadURL", u, err)
		}
	}
}
