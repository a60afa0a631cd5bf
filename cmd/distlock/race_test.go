//go:build race

package main

// raceBuild: the tests run with the race detector, so the binary they run
// is built with it too.
const raceBuild = true
