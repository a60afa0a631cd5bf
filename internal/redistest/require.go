package redistest

import (
	"errors"
	"os/exec"
)

// installHint is the message returned when redis-server cannot be found.
const installHint = "redis-server not found in PATH: install it with " +
	"`apt-get update && apt-get install -y redis-server` (or run ./scripts/test, which does)"

// ErrRedisServerNotFound is returned (wrapped) by RequireRedisServer and New
// when no redis-server binary is in PATH. Its message says how to install it.
var ErrRedisServerNotFound = errors.New(installHint)

// RequireRedisServer returns the path of the redis-server binary found in
// PATH, or ErrRedisServerNotFound, whose message explains how to install it.
func RequireRedisServer() (path string, err error) {
	path, err = exec.LookPath("redis-server")
	if err != nil {
		return "", ErrRedisServerNotFound
	}
	return path, nil
}
