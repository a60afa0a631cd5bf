//go:build !lite

package main

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	_ "github.com/distlock/distlock/engine/redis" // redis://, rediss://, redis+cluster://, redis+sentinel://, redlock://
)

// go-redis logs connection failures on its own; distlock reports them
// once, with what to do next. (This process's go-redis clients are all
// distlock's.)
func init() { goredis.SetLogger(silentLogger{}) }

// silentLogger discards go-redis's log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
