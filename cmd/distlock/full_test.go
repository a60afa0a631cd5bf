//go:build !lite

package main

// buildTags: the tests run in the default build (every backend), as the
// binary they run is.
const buildTags = ""
