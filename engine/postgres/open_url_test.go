package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	_ "github.com/distlock/distlock/engine/postgres"
)

// TestOpenBadURLHidesPasswords: the error of a bad PostgreSQL URL shows no
// password, neither the userinfo's nor a password parameter's, also where
// the reason (url.Parse's or pgx's) quotes the URL.
func TestOpenBadURLHidesPasswords(t *testing.T) {
	for _, u := range []string{
		"postgres://u:hunter2zz@h:abc/db",
		"postgresql://u:hunter2zz@h:abc/db?password=hunter3zz",
		"postgres://u@127.0.0.1:1/db?password=hunter2zz&sslmode=bogus",
		"postgres://u:hunter2zz@127.0.0.1:1/db?listen=maybe",
		"postgres://u:hunter2zz@127.0.0.1:1/db?sslmode=bogus",
	} {
		eng, err := engine.Open(context.Background(), u)
		if err == nil {
			_ = eng.Close()
		}
		if !errors.Is(err, engine.ErrBadURL) {
			t.Errorf("Open(%s) = %v, want ErrBadURL", engine.RedactURL(u), err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "hunter") {
			t.Errorf("Open of a bad URL: the error shows a password: %s", msg)
		}
	}
}

// TestOpenRefusesRepeatedParam: a parameter given twice, distlock's or
// pgx's, is a bad URL naming it (pgx would use one of the values).
func TestOpenRefusesRepeatedParam(t *testing.T) {
	for u, param := range map[string]string{
		"postgres://u@127.0.0.1:1/db?schema=a&schema=b":               "schema",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&sslmode=require": "sslmode",
	} {
		eng, err := engine.Open(context.Background(), u)
		if err == nil {
			_ = eng.Close()
		}
		var ue *engine.URLError
		if !errors.As(err, &ue) || !errors.Is(err, engine.ErrBadURL) || ue.Param != param {
			t.Errorf("Open(%s) = %v, want a bad URL with Param %s", u, err, param)
		}
	}
}
