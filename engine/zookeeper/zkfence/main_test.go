package zkfence_test

import (
	"os"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// ensemble is the one-member ZooKeeper the package's tests and examples
// share (started by TestMain with zktest, stopped after the last test;
// ZK_SERVERS names it for the examples).
var ensemble *zktest.Ensemble

func TestMain(m *testing.M) {
	var outside zktest.Outside
	code := func() int {
		defer func() {
			if r := recover(); r != nil {
				os.Stderr.WriteString("zkfence tests: no ZooKeeper\n")
				panic(r)
			}
		}()
		ensemble = zktest.Start(&outside, 1)
		os.Setenv("ZK_SERVERS", strings.Join(ensemble.Servers(), ","))
		return m.Run()
	}()
	outside.Close()
	os.Exit(code)
}
