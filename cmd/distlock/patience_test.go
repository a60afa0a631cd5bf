//go:build unix

package main

import "time"

// patience bounds a test's wait for something that must happen (a process
// to exit, a file to appear, a waiter to subscribe): long enough that a
// starved machine does not fail the test, which asserts what happens, not
// how soon.
const patience = time.Minute
