package etcd_test

import (
	"testing"

	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestLatch runs the countdown latch cases on one etcd member, every
// engine on an etcd client of its own.
func TestLatch(t *testing.T) {
	enginetest.RunLatch(t, harness(etcdtest.Start(t, 1)))
}
