package memory

import (
	"context"
	"strings"

	"github.com/distlock/distlock/engine"
)

// Scheme is the URL scheme of the in-memory engine: "mem://" opens a new,
// empty engine of this process (engine.Open), with no host and no
// parameters. Two Opens are two engines that share nothing.
const Scheme = "mem"

func init() { engine.Register(Scheme, open) }

func open(_ context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
	if !strings.EqualFold(rawURL, Scheme+"://") {
		return nil, engine.BadURL(rawURL, "", "the in-memory engine takes no host, path or parameter: use mem://")
	}
	return New(), nil
}
