package server_test

import (
	"context"
	"errors"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server"
)

var errDown = errors.New("engine down")

// failing is an engine whose every operation fails.
type failing struct{}

func (failing) Acquire(context.Context, engine.AcquireRequest) (engine.Grant, error) {
	return engine.Grant{}, errDown
}
func (failing) Extend(context.Context, []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	return nil, errDown
}
func (failing) Release(context.Context, engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return engine.ReleaseResult{}, errDown
}
func (failing) Inspect(context.Context, string) (engine.Info, error) { return engine.Info{}, errDown }
func (failing) RaiseFence(context.Context, engine.RaiseRequest) (bool, error) {
	return false, errDown
}
func (failing) Subscribe(context.Context, string) (engine.Subscription, error) { return nil, errDown }
func (failing) Close() error                                                   { return nil }
func (failing) ForceRelease(context.Context, string) (bool, error)             { return false, errDown }
func (failing) List(context.Context, string, string, int) ([]engine.Info, string, error) {
	return nil, "", errDown
}

func withMaxBody(n int64) server.Option { return server.WithMaxBodyBytes(n) }
