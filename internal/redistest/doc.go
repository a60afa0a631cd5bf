// Package redistest starts real redis-server processes for tests,
// benchmarks and fault-injection labs.
//
// Every server listens on a free loopback port (never 6379) and lives in its
// own temporary directory. Servers can be stopped, killed, paused, resumed and
// restarted on the same port, which makes the package suitable for exercising
// crash, partition-like (SIGSTOP) and data-loss scenarios against a genuine
// Redis. Start and StartN tie a server's lifetime to a testing.TB; New returns
// a server the caller must Close, for use outside of tests.
package redistest
