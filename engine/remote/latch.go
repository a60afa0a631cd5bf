package remote

import (
	"context"
	"net/http"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Countdown latches (engine.Latcher) over the server's /v1/latches
// endpoints; their waiters are woken through the name's subscription
// stream (Subscribe), which the server's engine wakes at zero. A server
// whose engine keeps no latches answers not_supported
// (errors.ErrUnsupported). A CountDown sent again (a lost answer, another
// server) carries the same id, which the server's engine applies once.

var _ engine.Latcher = (*Engine)(nil)

// latchPath is the path of the latch name's endpoint action.
func latchPath(name, action string) string {
	p := "/v1/latches/" + escapeName(name)
	if action != "" {
		p += "/" + action
	}
	return p
}

// SetCount implements engine.Latcher.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	var out api.LatchSetResponse
	err := e.do(ctx, "latch set", http.MethodPost, latchPath(name, "set"), api.LatchSetRequest{Count: count}, &out)
	return out.Set, err
}

// CountDown implements engine.Latcher.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	var out api.LatchResponse
	err := e.do(ctx, "latch count down", http.MethodPost, latchPath(name, "countdown"), api.LatchCountDownRequest{ID: id}, &out)
	return out.Count, err
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	var out api.LatchResponse
	err := e.do(ctx, "latch", http.MethodGet, latchPath(name, ""), nil, &out)
	return out.Count, err
}
