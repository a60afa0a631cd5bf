// Package rules holds the one copy of each rule that a request must keep
// before it reaches an engine: the bounds of a ttl and its fitting to the
// engine, of an owner, a waiter id, an acquire's attempt id, metadata and
// an election's value, and of a semaphore's limit and weight. The Client (package distlock), the
// server (package server) and the CLI (cmd/distlock) apply them, each
// answering in its own words and error types (a Client's *ArgumentError,
// the server's invalid_argument answer, the CLI's usage error).
//
// Every rule returns an *engine.ArgumentError, naming the argument and
// the reason, or nil. Rules that package engine keeps for every engine
// (engine.ValidateName, engine.CheckKind, engine.CheckWeight) stay there.
package rules
