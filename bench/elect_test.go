package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary double as S8's failover leader process: the
// harness starts itself again with leaderEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(leaderEnv) != "" {
		os.Exit(leaderChild())
	}
	os.Exit(m.Run())
}
