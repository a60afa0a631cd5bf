package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	_ "github.com/distlock/distlock/engine/memory"
	_ "github.com/distlock/distlock/engine/redis"
	_ "github.com/distlock/distlock/engine/remote"
)

// TestBadURLHidesPasswords: the error of a bad URL of every scheme of the
// root module, including the reasons that quote the URL (url.Parse's),
// shows no password: not the userinfo's (as written or unescaped), not
// that of a password or sentinel_password parameter.
func TestBadURLHidesPasswords(t *testing.T) {
	for _, u := range []string{
		"redis://:hunter2zz@127.0.0.1:abc",
		"rediss://user:hunter2zz@127.0.0.1:abc",
		"redis://:hunter%2Fzz@127.0.0.1:abc",
		"redis://:hunter/zz@127.0.0.1:abc",
		"redis+cluster://:hunter2zz@127.0.0.1:abc",
		"rediss-cluster://:hunter2zz@127.0.0.1:6379?dial_timout=1",
		"redis+sentinel://:hunter2zz@127.0.0.1:abc?master_name=m",
		"redis+sentinel://127.0.0.1:26379?master_name=m&password=hunter2zz&dial_timout=1",
		"redis+sentinel://127.0.0.1:abc?master_name=m&password=hunter2zz",
		"redis+sentinel://127.0.0.1:abc?master_name=m&sentinel_password=hunter2zz",
		"redlock://:hunter2zz@h1:1,h2:abc",
		"redlock://:hunter2zz@h1:1,h2:1,h3:1?node_timeout=x",
		"redis://:hunter2zz@a:1,redis://:hunter2zz@b:abc",
		"distlock://:hunter2zz@host:bad",
		"distlocks://:hunter2zz@a:1,b:bad",
		"distlock://:hunter2zz@host:1?password=hunter2zz",
		"mem://:hunter2zz@x",
		"nosuch://:hunter2zz@h?password=hunter2zz",
	} {
		_, err := engine.Open(context.Background(), u)
		var ue *engine.URLError
		if !errors.As(err, &ue) {
			t.Errorf("Open(%s) = %v, want an *engine.URLError", engine.RedactURL(u), err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "hunter") || !strings.Contains(msg, "****") {
			t.Errorf("Open of a bad URL: the error shows a password: %s", msg)
		}
	}
}

// TestRedactURL: RedactURL hides every password of a list of URLs and
// keeps the rest.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/0":                                       "redis://****@h:1/0",
		"redis://h:1?password=pw&db=1":                             "redis://h:1?password=****&db=1",
		"redis+sentinel://:s3cret@s:1?sentinel_password=t0ken&x=1": "redis+sentinel://****@s:1?sentinel_password=****&x=1",
		"distlock://:t0ken@a:1,b:2,distlock://:t0ken@c:3":          "distlock://****@a:1,b:2,distlock://****@c:3",
		"redis://h:1": "redis://h:1",
	} {
		if got := engine.RedactURL(in); got != want {
			t.Errorf("RedactURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestDistlockURLParamIsAName: a parameter of a distlock:// URL (which
// takes none) is named in Param by its name, not with its value.
func TestDistlockURLParamIsAName(t *testing.T) {
	_, err := engine.Open(context.Background(), "distlock://:tok3n@b:2?wait=1s&x=2")
	var ue *engine.URLError
	if !errors.As(err, &ue) || ue.Param != "wait" {
		t.Fatalf("Open = %v, want a bad URL with Param wait", err)
	}
}
