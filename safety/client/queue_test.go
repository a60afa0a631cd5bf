package client

import (
	"testing"

	"github.com/distlock/distlock/engine"
)

// The queue-hidden control rests on slowTop hiding the engine's queue (and
// its capabilities: WithFair is refused without them); queueTop passes both
// on.
func TestQueueHiddenUnlessAsked(t *testing.T) {
	var hidden engine.Engine = slowTop{}
	if _, ok := hidden.(engine.Queuer); ok {
		t.Fatal("slowTop passes the waiter queue on")
	}
	if _, ok := hidden.(engine.Describer); ok {
		t.Fatal("slowTop passes the engine's capabilities on")
	}
	var shown engine.Engine = &queueTop{}
	if _, ok := shown.(engine.Queuer); !ok {
		t.Fatal("queueTop hides the waiter queue")
	}
	if _, ok := shown.(engine.Describer); !ok {
		t.Fatal("queueTop hides the engine's capabilities")
	}
}
