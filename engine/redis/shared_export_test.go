package redis

// SharedKeys returns the keys of the shared lock name (scripts/shared.lua),
// for the tests of package redis_test.
func SharedKeys(e *Engine, name string) []string { return e.sharedKeys(name) }
