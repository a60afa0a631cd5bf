package redis

import (
	"context"
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestOpenOwnsClient: an engine opened by URL closes the client it made
// (a closed go-redis client answers ErrClosed).
func TestOpenOwnsClient(t *testing.T) {
	ctx := context.Background()
	r := redistest.Start(t)
	eng, err := engine.Open(ctx, r.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := eng.(*Engine).client
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Ping(ctx).Err(); !errors.Is(err, goredis.ErrClosed) {
		t.Fatalf("the client Open made is still open after Close: Ping = %v", err)
	}
}
