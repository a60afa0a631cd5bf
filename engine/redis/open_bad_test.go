package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestInspectServerErrors: an error reply that is not WRONGTYPE (a wrong
// password, a database number the server does not have) comes out of
// Inspect as the server's error, not as "not a distlock lock".
func TestInspectServerErrors(t *testing.T) {
	ctx := context.Background()
	r := redistest.Start(t)
	if err := r.Client().Do(ctx, "ACL", "SETUSER", "alice", "on", ">right", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ url, want string }{
		{"redis://alice:wrong@" + r.Addr(), "WRONGPASS"},
		{r.URL() + "/99", "DB index is out of range"},
	} {
		eng, err := engine.Open(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = eng.Inspect(ctx, "x")
		_ = eng.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, errNotALock) {
			t.Errorf("Inspect over %s = %v, want the server's %s error", engine.RedactURL(c.url), err, c.want)
		}
	}
}

// TestOpenRefusesUnusableOptions: options go-redis accepts from a URL but
// cannot use (a panic, every call failing, writes sent to a replica), a
// parameter given twice, a typo and a database on Cluster are refused as
// a bad URL naming the parameter; Open returns no engine.
func TestOpenRefusesUnusableOptions(t *testing.T) {
	const (
		one      = "redis://127.0.0.1:6379"
		cluster  = "redis+cluster://127.0.0.1:6379"
		sentinel = "redis+sentinel://127.0.0.1:26379?master_name=m"
	)
	cases := []struct{ url, param string }{
		{one + "?pool_size=-3", "pool_size"},
		{cluster + "?pool_size=-3", "pool_size"},
		{sentinel + "&pool_size=-3", "pool_size"},
		{one + "?min_idle_conns=-1", "min_idle_conns"},
		{cluster + "?max_idle_conns=-1", "max_idle_conns"},
		{sentinel + "&max_active_conns=-1", "max_active_conns"},
		{one + "?max_retries=-5", "max_retries"},
		{cluster + "?max_retries=-5", "max_retries"},
		{sentinel + "&max_retries=-5", "max_retries"},
		{one + "?dial_timeout=-1", "dial_timeout"},
		{one + "?dial_timeout=0", "dial_timeout"},
		{sentinel + "&dial_timeout=-1s", "dial_timeout"},
		{cluster + "?max_redirects=-5", "max_redirects"},
		{sentinel + "&route_by_latency=true", "route_by_latency"},
		{sentinel + "&route_randomly=true", "route_randomly"},
		{sentinel + "&replica_only=true", "replica_only"},
		{cluster + "?route_by_latency=true", "route_by_latency"},
		{cluster + "?route_randomly=true", "route_randomly"},
		{cluster + "?read_only=true", "read_only"},
		{one + "?dial_timout=1s", "dial_timout"},
		{sentinel + "&dial_timout=1s", "dial_timout"},
		{one + "?pool_size=x", "pool_size"},
		{cluster + "?addr=nohost", "addr"},
		{one + "?db=x", "db"},
		{one + "?dial_timeout=1s&dial_timeout=2s", "dial_timeout"},
		{cluster + "?dial_timeout=1s&dial_timeout=2s", "dial_timeout"},
		{"redis+sentinel://127.0.0.1:26379?master_name=a&master_name=b", "master_name"},
		{"rediss://127.0.0.1:6379?dial_timeout=1s&dial_timeout=2s", "dial_timeout"},
		{"redlock://a:1,b:1,c:1?dial_timeout=1s&dial_timeout=2s", "dial_timeout"},
		{"redlock://a:1,b:1,c:1?node_timeout=1s&node_timeout=2s", "node_timeout"},
		{"redis://a:1?pool_size=-1,redis://b:1,redis://c:1", "pool_size"},
		{"redis+cluster://127.0.0.1:6379/3", ""},
		{"redis-cluster://127.0.0.1:6379/0", ""},
	}
	for _, c := range cases {
		eng, err := engine.Open(context.Background(), c.url)
		var ue *engine.URLError
		if !errors.As(err, &ue) || !errors.Is(err, engine.ErrBadURL) || ue.Param != c.param {
			t.Errorf("Open(%s) = %v, want a bad URL with Param %q", c.url, err, c.param)
		}
		if eng != nil {
			t.Errorf("Open(%s) returned an engine with its error", c.url)
			_ = eng.Close()
		}
	}
}

// TestOpenKeepsGoRedisSpecialValues: the values go-redis gives a meaning
// (max_retries=-1: no retry; read_timeout and write_timeout -1: none)
// and an addr list stay accepted.
func TestOpenKeepsGoRedisSpecialValues(t *testing.T) {
	for _, u := range []string{
		"redis://127.0.0.1:6379?max_retries=-1&read_timeout=-1&write_timeout=-1&pool_size=0",
		"redis+cluster://127.0.0.1:6379?addr=127.0.0.1:6380&addr=127.0.0.1:6381&max_redirects=-1",
		"redis+sentinel://127.0.0.1:26379?master_name=m&addr=127.0.0.1:26380&addr=127.0.0.1:26381&dial_timeout=2s",
		"redis+cluster://127.0.0.1:6379/",
	} {
		eng, err := engine.Open(context.Background(), u)
		if err != nil {
			t.Errorf("Open(%s) = %v", u, err)
			continue
		}
		_ = eng.Close()
	}
}
