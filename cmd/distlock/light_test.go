//go:build !full

package main

import "testing"

// TestLightBuildNamesTheTag: the default build has no etcd and no
// PostgreSQL; asking for them says how to get them, as a usage error.
func TestLightBuildNamesTheTag(t *testing.T) {
	for _, env := range []map[string]string{{envEtcd: "http://127.0.0.1:1"}, {envPostgres: "postgres://u@127.0.0.1:1/db"}} {
		expect(t, cli{env: env}.run(t, "status", "x"), exitUsage, "-tags full")
	}
	expect(t, cli{}.run(t, "postgres", "init"), exitUsage, "-tags full")
}

// buildTags: the binary the tests run is the default build, as this test
// binary is.
const buildTags = ""
