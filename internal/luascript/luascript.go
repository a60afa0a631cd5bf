// Package luascript runs Redis Lua scripts by their SHA1 digest (EVALSHA)
// without computing SHA-1 in Go: the server computes the digest, which
// SCRIPT LOAD answers the first time a script is run, and it is kept for
// every later run. A program that uses it therefore starts and runs under
// GODEBUG=fips140=only, where crypto/sha1 panics (and go-redis's
// NewScript, which hashes at package init, with it).
//
// A digest depends on the script's text alone, so one digest serves every
// client and every server; whether a server has the script cached is
// learned from its answers: after a NOSCRIPT (a restart, SCRIPT FLUSH, a
// Cluster master that missed the load) a script is sent with EVAL, which
// runs it anyway.
package luascript

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script. Its zero value is not usable; see New.
type Script struct {
	src     string
	digest  atomic.Value // the server's answer to SCRIPT LOAD: a string, boxed once
	refused atomic.Int64 // when a server last refused SCRIPT LOAD (UnixNano), 0 if none did
}

// reloadAfter is how long a script whose SCRIPT LOAD a server refused (an
// ACL without SCRIPT, a renamed command) is sent with EVAL before a load is
// tried again.
const reloadAfter = time.Minute

// New returns the script with source src. It computes nothing: the digest
// comes from the server when the script is first run (Run) or loaded
// (Load).
func New(src string) *Script { return &Script{src: src} }

// Source returns the script's text, for EVAL.
func (s *Script) Source() string { return s.src }

// Digest returns the script's SHA1 in hex as a server answered it, boxed
// once (an EVALSHA argument without an allocation), or nil before one did.
func (s *Script) Digest() any { return s.digest.Load() }

// Load sends SCRIPT LOAD on c and keeps the digest it answers. On a
// Cluster, go-redis loads the script on every master and answers the
// digest of any that did, with the error of any that failed: the digest is
// kept all the same (every server computes the same one), and a master
// without the script answers NOSCRIPT, which Run handles.
func (s *Script) Load(ctx context.Context, c redis.Scripter) error {
	cmd := c.ScriptLoad(ctx, s.src)
	if d := cmd.Val(); d != "" {
		s.digest.Store(d)
	}
	return cmd.Err()
}

// Ensure returns the digest, loading it with SCRIPT LOAD on c first when no
// server has answered it yet; nil when that fails, and without trying
// again for reloadAfter when a server refused the load (a reply error).
// c must be a client, not a pipeline (a pipelined SCRIPT LOAD has no
// answer yet).
func (s *Script) Ensure(ctx context.Context, c redis.Scripter) any {
	if d := s.digest.Load(); d != nil {
		return d
	}
	if at := s.refused.Load(); at != 0 && time.Since(time.Unix(0, at)) < reloadAfter {
		return nil
	}
	err := s.Load(ctx, c) // on failure the caller sends EVAL, which answers the error if it persists
	d := s.digest.Load()
	var reply redis.Error
	if d == nil && errors.As(err, &reply) {
		s.refused.Store(time.Now().UnixNano())
	}
	return d
}

// Run runs the script on c with EVALSHA, loading its digest first if it is
// not known yet, and with EVAL when the server does not have the script
// cached or the digest could not be loaded. c must be a client, not a
// pipeline (see EvalSha).
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	d, ok := s.Ensure(ctx, c).(string)
	if !ok {
		return s.Eval(ctx, c, keys, args...)
	}
	cmd := c.EvalSha(ctx, d, keys, args...)
	if IsNoScript(cmd.Err()) {
		return s.Eval(ctx, c, keys, args...)
	}
	return cmd
}

// EvalSha sends the script on c, a client or a pipeline, with EVALSHA when
// its digest is known and with EVAL otherwise; it never sends anything
// else, so it can be queued in a pipeline. A NOSCRIPT reply is the
// caller's to handle (Load, then send again).
func (s *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	if d, ok := s.digest.Load().(string); ok {
		return c.EvalSha(ctx, d, keys, args...)
	}
	return s.Eval(ctx, c, keys, args...)
}

// Eval sends the script with EVAL, its source in the command.
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, s.src, keys, args...)
}

// IsNoScript reports whether err is a server's NOSCRIPT reply (no script
// with that digest cached), raw or as go-redis's redis.ErrNoScript.
func IsNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}
