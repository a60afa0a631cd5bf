// Package srvproc runs the server processes of the test harnesses
// (redistest, etcdtest, zktest): a process started in its own process
// group and killed with the test binary (procstop.Attr), its output
// appended to a log file, signalled and killed by pid (Process); the
// current process of a harness's member, which a restart replaces (Slot);
// loopback ports picked free (FreePort, FreeAddr); and the start of a
// group of members begun again on fresh ports when one of them exits
// while the group starts (StartFresh: a port, free when picked, taken by
// another process before the server bound it).
//
// procstop keeps the one idea of telling when a SIGSTOP has stopped every
// thread; this package uses it for Pause.
package srvproc

// TB is the part of testing.TB the harnesses use; etcdtest.Main and
// zktest.Outside provide one outside a test.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
	Failed() bool
}
