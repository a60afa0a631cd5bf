package remote

import (
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// partialOf is the *engine.PartialError a server's "partial" field stands
// for (nil when it has none): the server's engine answered from some of
// its parts (a Redlock quorum's nodes that answered).
func partialOf(p *api.Partial) *engine.PartialError {
	if p == nil {
		return nil
	}
	return &engine.PartialError{Unanswered: p.Unanswered}
}
