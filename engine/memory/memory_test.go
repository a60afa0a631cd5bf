package memory_test

import (
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/memory"
)

func TestConformance(t *testing.T) {
	shared := memory.New() // one authority for every client in the suite
	t.Cleanup(func() { _ = shared.Close() })
	h := enginetest.Harness{
		New: func(t *testing.T) engine.Engine { return shared },
	}
	enginetest.Run(t, h)
	enginetest.Check(t, h)
	enginetest.CheckMutants(t, h)
}
