package etcdfence_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestMain starts one etcd member for the package's tests and examples
// (ETCD_ENDPOINT), unless one is given.
func TestMain(m *testing.M) {
	os.Setenv("ETCD_EXAMPLE_RUN", fmt.Sprintf("%x", rand.Uint64()))
	if os.Getenv("ETCD_ENDPOINT") != "" {
		os.Exit(m.Run())
	}
	code := etcdtest.Main(func(endpoint string) int {
		os.Setenv("ETCD_ENDPOINT", endpoint)
		return m.Run()
	})
	os.Exit(code)
}
