package etcd

import "fmt"

// ForeignKeyError reports a value at a lock's key that distlock did not
// write (not a hold's JSON: a key another tool put under the engine's
// prefix, say). No retry mends it, so it is permanent (engine.IsPermanent:
// a wait ends with it at once); the lock can be neither taken nor read
// until the key is deleted (distlock leaks lists it; distlock
// force-release NAME deletes it).
type ForeignKeyError struct {
	Name string // the lock's name
	Key  string // the key
	Err  error  // why its value is no hold
}

// Error names the lock, its key and why its value is no hold.
func (e *ForeignKeyError) Error() string {
	return fmt.Sprintf("etcd: lock %q: a value distlock did not write is at its key %s: %v", e.Name, e.Key, e.Err)
}

// Unwrap returns why the value is no hold.
func (e *ForeignKeyError) Unwrap() error { return e.Err }

// Permanent implements engine.Permanent: no retry mends a foreign value.
func (e *ForeignKeyError) Permanent() bool { return true }

// ForeignKey returns Key: the method by which code that does not link this
// package (distlock's CLI) tells the error, as the Redis engine's.
func (e *ForeignKeyError) ForeignKey() string { return e.Key }
