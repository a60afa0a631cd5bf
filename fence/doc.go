// Package fence checks fencing tokens on the resource side of a distributed
// lock.
//
// Every distlock grant carries a fencing token: a uint64 that strictly
// increases per lock name. A lock holder whose lease ran out (a long GC
// pause, a partition) may still believe it holds the lock; fencing makes the
// resource itself reject such late writes (Kleppmann, "How to do distributed
// locking", 2016).
//
// The rule is the same for every guard in this package: a write for a
// resource is accepted iff its token is at least the highest token accepted
// for that resource so far. A tie (token equal to the highest) is accepted
// only from the holder that wrote with that token before, so one holder can
// write several times under one grant while a second holder that somehow got
// the same token cannot. A rejected write changes nothing and is reported as
// a *StaleError, which matches ErrStale with errors.Is.
//
// Three guards implement the rule:
//
//   - Guard keeps the high-water marks in process memory.
//   - Redis keeps them in a Redis hash next to the data and runs the write
//     command in the same Lua script as the check (not in builds with the
//     tag lite, the CLI's light build, which compiles no Redis client).
//   - Predicate and ExecFenced keep them in columns of the SQL row that is
//     written, so the UPDATE itself checks the token.
package fence
