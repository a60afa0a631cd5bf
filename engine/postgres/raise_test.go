package postgres_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
)

// TestSharedRaiseBounds: RaiseSharedFence within engine.CheckRaise
// (raise_shared_fence and _check_raise).
func TestSharedRaiseBounds(t *testing.T) {
	const schema = "raisebounds"
	migrated(t, schema)
	enginetest.SharedRaiseBounds(t, newEngine(t, newPool(t), schema))
}
