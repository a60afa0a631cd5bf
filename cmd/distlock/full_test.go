//go:build full

package main

// buildTags: the tests run in the full build (etcd, PostgreSQL), so the
// binary they run is built with it too.
const buildTags = "full"
