// Command etcdbuild builds the etcd server the tests run (etcdtest.Build:
// go build of go.etcd.io/etcd/server/v3 at etcdtest.Version, cached in the
// user cache dir) and prints its path. scripts/warm runs it so that the
// build overlaps other set-up work instead of the first etcd test.
package main

import (
	"fmt"
	"os"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

func main() {
	path, err := etcdtest.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdbuild:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}
