package redistest

import (
	"path/filepath"
	"strconv"
)

// config collects the settings applied by Options.
type config struct {
	persistence bool
	args        []string
	sentinel    string // the config file's first lines: the process is a redis-sentinel
}

// Option configures a Server started by Start, StartN or New.
type Option func(*config)

// WithPersistence enables AOF persistence with "appendonly yes" and
// "appendfsync always", so every acknowledged write survives Kill followed by
// Restart. By default a server persists nothing (--save "" --appendonly no).
func WithPersistence() Option {
	return func(c *config) { c.persistence = true }
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory", "10mb"). They come after the package's own
// arguments, so they override them.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// newConfig applies opts to a default config.
func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// serverArgs returns the redis-server arguments for a server on port whose
// data directory and log file live in dir. A sentinel's start with its
// config file (sentinelConf) and --sentinel.
func (c config) serverArgs(port int, dir, logfile string) []string {
	var args []string
	if c.sentinel != "" {
		args = []string{filepath.Join(dir, sentinelConf), "--sentinel"}
	}
	args = append(args,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--logfile", logfile,
	)
	if c.persistence {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	return append(args, c.args...)
}
