package redis

import "github.com/distlock/distlock/engine"

// CheckName implements engine.NameChecker: a lock's keys are
// prefix{name}..., and Redis Cluster hashes only what lies between the
// first '{' and the first '}' after it. A name that starts with '}' would
// close the tag at once and leave it empty, so the whole key would be
// hashed and a lock's keys would fall into different slots.
func (e *Engine) CheckName(name string) error {
	if name != "" && name[0] == '}' {
		return &engine.ArgumentError{Arg: "name", Reason: "must not start with '}' (a Redis Cluster hash tag)"}
	}
	return nil
}
