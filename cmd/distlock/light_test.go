//go:build lite

package main

import "testing"

// TestLightBuildNamesTheTag: the light build (-tags lite) has no backend
// client; asking for Redis, Redlock, etcd, PostgreSQL or ZooKeeper says how
// to get them, as a usage error.
func TestLightBuildNamesTheTag(t *testing.T) {
	for _, env := range []map[string]string{
		{envRedis: "redis://127.0.0.1:1"},
		{envRedis: "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3"},
		{"DISTLOCK_URL": "redis+cluster://127.0.0.1:1"},
		{envEtcd: "http://127.0.0.1:1"},
		{envPostgres: "postgres://u@127.0.0.1:1/db"},
		{envZooKeeper: "127.0.0.1:1"},
	} {
		expect(t, cli{env: env}.run(t, "status", "x"), exitUsage, "without -tags lite")
	}
	expect(t, cli{}.run(t, "postgres", "init"), exitUsage, "without -tags lite")
}

// TestLightServeEmbedded: the README's first command is the light build's
// serve on the embedded engine; the whole TestServeEmbedded holds for it.
func TestLightServeEmbedded(t *testing.T) { TestServeEmbedded(t) }

// buildTags: the binary the tests run is the light build, as this test
// binary is.
const buildTags = "lite"
