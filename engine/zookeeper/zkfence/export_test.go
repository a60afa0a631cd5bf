package zkfence

// SetHook makes g run f between its read of the mark and its multi-op.
func SetHook(g *Guard, f func()) { g.hook = f }

// Unversioned is a mutant: g sets the mark at any version, so the check and
// the write no longer commit against the mark the check read.
func Unversioned(g *Guard) { g.unversioned = true }
