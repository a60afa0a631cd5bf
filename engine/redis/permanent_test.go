package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestRefusedCommandsEndWaits: Redis refusing the engine's commands for
// good (an ACL user that may not run scripts: NOPERM; a wrong password:
// WRONGPASS) ends Acquire with context.Background() at once, with a
// *BackendError carrying Redis's error: no retry mends an ACL. It neither
// retries until the context ends nor waits out the failure budget
// (BackendError.Failing is zero). The minute's guard keeps a wait that
// never ends from hanging the test; it asserts no speed.
func TestRefusedCommandsEndWaits(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := srv.Client()
	if err := admin.Do(ctx, "ACL", "SETUSER", "noscripts", "on", ">pw-0123456789", "~*", "&*", "+@all", "-@scripting").Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what, password string
		is             func(error) bool
	}{
		{"NOPERM", "pw-0123456789", goredis.IsPermissionError},
		{"WRONGPASS", "not-the-password", goredis.IsAuthError},
	} {
		rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Username: "noscripts", Password: tc.password,
			ContextTimeoutEnabled: true, DisableIdentity: true})
		eng, err := redisengine.New(rdb)
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(eng)
		done := make(chan error, 1)
		go func() { _, err := c.Acquire(ctx, "acl"); done <- err }()
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: Acquire did not return", tc.what)
		}
		var be *distlock.BackendError
		switch {
		case !errors.As(err, &be) || !tc.is(err):
			t.Errorf("%s: Acquire = %v, want a *BackendError with Redis's %s", tc.what, err, tc.what)
		case be.Failing != 0:
			t.Errorf("%s: waited out the failure budget (%v) for an error no retry mends", tc.what, be.Failing)
		}
		_ = c.Close()
		_ = eng.Close()
		_ = rdb.Close()
	}
}

// TestUnknownCommandEndsWaits: a Redis that does not know the engine's
// commands (EVALSHA and EVAL renamed away, as some managed services and
// proxies do) ends Acquire with context.Background() at once with Redis's
// "unknown command", without waiting out the failure budget.
func TestUnknownCommandEndsWaits(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--rename-command", "EVALSHA", "", "--rename-command", "EVAL", ""))
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	done := make(chan error, 1)
	go func() { _, err := c.Acquire(context.Background(), "unknown"); done <- err }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Acquire did not return")
	}
	var be *distlock.BackendError
	switch {
	case !errors.As(err, &be) || !goredis.HasErrorPrefix(err, "unknown command"):
		t.Errorf("Acquire = %v, want a *BackendError with Redis's unknown command", err)
	case be.Failing != 0:
		t.Errorf("waited out the failure budget (%v) for an error no retry mends", be.Failing)
	}
}
