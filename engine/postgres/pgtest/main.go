package pgtest

import (
	"fmt"
	"os"
	"testing"
)

// EnvURL is the variable Main sets to the server's URL, for Examples.
const EnvURL = "DISTLOCK_POSTGRES"

// Main starts one server for a test binary, gives it to use (which may
// keep it for the tests), sets EnvURL to its URL, runs the tests and stops
// the server. Call it from TestMain: os.Exit(pgtest.Main(m, nil)).
func Main(m *testing.M, use func(*Server)) int {
	s, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Stop()
	if use != nil {
		use(s)
	}
	if err := os.Setenv(EnvURL, s.URL()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
