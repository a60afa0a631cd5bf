package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/engine/quorum"
	"github.com/distlock/distlock/engine/remote"
)

// Environment variables that choose the backend: DISTLOCK_URL takes any
// backend URL; the others are the older, per-backend settings, each mapped
// to a URL (backendURL).
const (
	envURL            = "DISTLOCK_URL"
	envRedis          = "DISTLOCK_REDIS"
	envServer         = "DISTLOCK_SERVER"
	envEtcd           = "DISTLOCK_ETCD"
	envPostgres       = "DISTLOCK_POSTGRES"
	envPostgresSchema = "DISTLOCK_POSTGRES_SCHEMA"
	envZooKeeper      = "DISTLOCK_ZOOKEEPER"
)

// pingTimeout bounds the first round trip, which tells an unreachable
// backend from a busy lock before any waiting starts. A command's wait
// budget (--wait) bounds it too: see acquireWith.
const pingTimeout = 5 * time.Second

// checkName is the lock name the first round trip inspects.
const checkName = "distlock-cli-check"

// fullBuildHint says how to get a distlock that speaks every backend.
const fullBuildHint = "this distlock is the light build (-tags lite), without %s support: " +
	"build it without -tags lite: go install ./cmd/distlock (or go run ./cmd/distlock %s)"

// interrupted returns ctx's error when ctx was cancelled (a signal), nil
// when it is live or its deadline (a wait budget) passed: a check cut
// short by the budget reports the backend unreachable, with its exit code.
func interrupted(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return nil
}

// backendHelp documents the backend settings, for the help texts.
const backendHelp = `Backend (every command but demo):
  DISTLOCK_URL=URL (or --backend URL)   any backend by URL (docs/CLI.md lists them):
                 mem:// redis:// rediss:// redis+cluster:// redis+sentinel://
                 redlock://h1,h2,h3 distlock:// distlocks:// etcd:// postgres://
                 zookeeper://
  DISTLOCK_REDIS=redis://[[user]:password@]host:6379[/db]   one Redis server
                 (rediss:// for TLS); --redis URL overrides it.
  DISTLOCK_REDIS=redis-cluster://host:6379?addr=host2:6379&addr=host3:6379
                 a Redis Cluster (rediss-cluster:// for TLS): the host and
                 every addr are seed nodes.
  DISTLOCK_REDIS=redis://a:6379,redis://b:6379,redis://c:6379
                 Redlock over N independent Redis nodes (a majority decides);
                 DISTLOCK_NODE_TIMEOUT=50ms is its per-node timeout.
  DISTLOCK_SERVER=http://host:7420[,http://host2:7420...]   a distlock server
                 (distlock serve), or several on one shared backend: when one
                 stops answering, the others carry on. DISTLOCK_TOKEN=TOKEN
                 is the bearer token, if they need one.
  DISTLOCK_ETCD=http://host:2379[,http://host2:2379...]   an etcd v3 cluster:
                 ttls are whole seconds of at least 2s there (rounded up).
  DISTLOCK_POSTGRES=postgres://user:password@host:5432/db   PostgreSQL, in the
                 schema DISTLOCK_POSTGRES_SCHEMA (default distlock), made once
                 with 'distlock postgres init'.
  DISTLOCK_ZOOKEEPER=host:2181[,host2:2181...]   a ZooKeeper ensemble: a ttl
                 may not exceed the session timeout it grants (40s asked).
  (the light build, -tags lite, speaks mem:// and distlock:// only)
`

// backend is an open connection to the lock backend.
type backend struct {
	client *distlock.Client
	eng    engine.Engine // opened by URL: its Close closes its connections
	where  string        // for messages: "Redis at 10.0.0.5:6379"
	// role is the role a distlock server gave the token (GET /v1/info:
	// read, write, admin), empty on any other backend.
	role string
}

// connect opens the backend of a one-shot command (see openBackend) with a
// context that SIGINT and SIGTERM cancel. done closes the backend, with
// the leases its client holds meeting fate (see backend.close), and stops
// the signal handling.
func (a *app) connect(cmd, flagURL string, fate leaseFate) (ctx context.Context, b *backend, done func(), err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	b, err = a.openBackend(ctx, cmd, flagURL)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return ctx, b, func() {
		b.close(fate)
		stop()
	}, nil
}

// openBackend opens the backend that the --redis or --backend flag (if not
// empty) or the environment names, and checks that it answers (see
// checkBackend). Its errors are *cliError with the exit code and a hint.
func (a *app) openBackend(ctx context.Context, cmd, flagURL string) (*backend, error) {
	u, setting, err := a.backendURL(flagURL)
	if err != nil {
		return nil, err
	}
	b, err := a.openURL(ctx, u, setting)
	if err == nil {
		if _, ok := b.eng.(*memory.Engine); ok {
			// mem:// is this process's own engine: its locks exclude nobody else.
			fmt.Fprintf(a.stderr, "distlock %s: note: %s is an engine of this distlock process alone: no other process shares its locks, "+
				"so they keep no other distlock out. For locks shared by the processes of this host, with nothing installed: "+
				"distlock serve, and %s=http://127.0.0.1:7420\n", cmd, u, envServer)
		}
	}
	return b, err
}

// backendURL maps the flag or the one backend setting of the environment
// to a backend URL, and names the setting it came from, for messages.
func (a *app) backendURL(flagURL string) (u, setting string, err error) {
	if u := strings.TrimSpace(flagURL); u != "" {
		return u, "--redis or --backend", nil
	}
	settings := []struct {
		env   string
		toURL func(string) (string, error)
	}{
		{envURL, nil}, {envRedis, nil}, {envServer, a.serverURL}, {envEtcd, etcdURL}, {envPostgres, a.postgresURL}, {envZooKeeper, zookeeperURL},
	}
	for i, s := range settings {
		v := strings.TrimSpace(a.getenv(s.env))
		if v == "" {
			continue
		}
		for _, other := range settings[i+1:] {
			if strings.TrimSpace(a.getenv(other.env)) != "" {
				return "", "", usageErr("both %s and %s are set: unset one of them (or pass --backend URL).", s.env, other.env)
			}
		}
		if s.toURL != nil {
			v, err = s.toURL(v)
		}
		return v, s.env, err
	}
	return "", "", usageErr("this command needs a shared lock backend, and none is configured: "+
		"set %s=redis://host:6379 (or pass --redis URL), %s=http://host:7420 for a distlock server, or %s=URL for any backend.\n"+
		"To see distlock work with nothing installed, run: distlock demo", envRedis, envServer, envURL)
}

// serverURL maps DISTLOCK_SERVER (http:// or https:// URLs) and
// DISTLOCK_TOKEN to a distlock:// URL list.
func (a *app) serverURL(list string) (string, error) {
	return mapURLs(list, envServer, map[string]string{"http": "distlock", "https": "distlocks"},
		url.UserPassword("", strings.TrimSpace(a.getenv(envToken))))
}

// etcdURL maps DISTLOCK_ETCD (http:// or https:// endpoints) to an
// etcd:// or etcds:// URL.
func etcdURL(list string) (string, error) {
	u, err := mapURLs(list, envEtcd, map[string]string{"http": "etcd", "https": "etcds"}, nil)
	if err != nil {
		return "", err
	}
	scheme, _, _ := strings.Cut(u, "://")
	hosts := strings.ReplaceAll(u, scheme+"://", "")
	return scheme + "://" + hosts, nil
}

// zookeeperURL maps DISTLOCK_ZOOKEEPER (host:port, several separated by
// commas) to a zookeeper:// URL.
func zookeeperURL(list string) (string, error) {
	for _, h := range strings.Split(list, ",") {
		if h = strings.TrimSpace(h); h == "" || strings.Contains(h, "/") {
			return "", usageErr("cannot use %q from %s: want host:2181[,host2:2181...].", h, envZooKeeper)
		}
	}
	return "zookeeper://" + strings.ReplaceAll(list, " ", ""), nil
}

// postgresURL adds DISTLOCK_POSTGRES_SCHEMA to DISTLOCK_POSTGRES.
func (a *app) postgresURL(u string) (string, error) {
	schema := strings.TrimSpace(a.getenv(envPostgresSchema))
	if schema == "" {
		return u, nil
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "schema=" + url.QueryEscape(schema), nil
}

// mapURLs rewrites the schemes of a comma-separated list by schemes (a
// URL of another scheme is a usage error naming env), with user as the
// userinfo when it has a password.
func mapURLs(list, env string, schemes map[string]string, user *url.Userinfo) (string, error) {
	var out []string
	for _, raw := range strings.Split(list, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			return "", usageErr("empty URL in %s=%q: separate URLs with single commas.", env, list)
		}
		u, err := url.Parse(raw)
		if err != nil || schemes[u.Scheme] == "" || u.Host == "" {
			return "", usageErr("cannot use %q from %s: want http://host:port or https://host:port, several separated by commas.", raw, env)
		}
		u.Scheme = schemes[u.Scheme]
		if p, ok := user.Password(); ok && p != "" {
			u.User = user
		}
		out = append(out, u.String())
	}
	return strings.Join(out, ","), nil
}

// openURL opens the backend of u (from setting) and checks that it
// answers.
func (a *app) openURL(ctx context.Context, u, setting string, opts ...engine.OpenOption) (*backend, error) {
	nodeTimeout, err := a.nodeTimeout()
	if err != nil {
		return nil, err
	}
	if nodeTimeout > 0 {
		opts = append(opts, engine.WithNodeTimeout(nodeTimeout))
	}
	eng, err := engine.Open(ctx, u, opts...)
	if err != nil {
		return nil, openErr(err, u, setting)
	}
	b := &backend{client: distlock.New(eng), eng: eng, where: describe(eng)}
	if err := a.checkBackend(ctx, b, setting, pingGrace(nodeTimeout)); err != nil {
		_ = eng.Close()
		return nil, err
	}
	return b, nil
}

// fullBuildOnly names the backends the light build leaves out, by the
// prefix of their URL schemes.
var fullBuildOnly = map[string]string{
	"redis":     "Redis",
	"redlock":   "Redis",
	"etcd":      "etcd",
	"postgres":  "PostgreSQL",
	"zookeeper": "ZooKeeper",
}

// openErr explains an error of engine.Open: a URL that cannot be used
// (engine.ErrBadURL, engine.ErrUnknownScheme, ErrInvalidArgument) is a
// usage error, any other a backend that does not answer (exitBackend).
func openErr(err error, u, setting string) error {
	scheme, _, _ := strings.Cut(strings.ToLower(u), "://")
	if errors.Is(err, engine.ErrUnknownScheme) {
		for prefix, backend := range fullBuildOnly {
			if strings.HasPrefix(scheme, prefix) {
				return usageErr(fullBuildHint, backend, "...")
			}
		}
	}
	if !errors.Is(err, engine.ErrBadURL) && !errors.Is(err, engine.ErrUnknownScheme) && !errors.Is(err, distlock.ErrInvalidArgument) {
		// The URL is good, the backend did not answer (a ZooKeeper
		// ensemble granting no session, an etcd refusing the token
		// request): as the check after Open reports it.
		return &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach the backend of %s: %v.\nCheck that it is running there and that %s points at it.",
			setting, err, setting)}
	}
	return usageErr("cannot use the backend URL of %s: %v.\nSee 'distlock help' for the forms of every backend's URL.",
		setting, strings.TrimPrefix(err.Error(), "distlock: "))
}

// describe names an engine for messages.
func describe(eng engine.Engine) string {
	switch e := eng.(type) {
	case *memory.Engine:
		return "embedded"
	case *quorum.Engine:
		return fmt.Sprintf("Redlock over %d Redis nodes", e.Nodes())
	case fmt.Stringer:
		if where, ok := strings.CutPrefix(e.String(), "redis "); ok {
			return "Redis at " + where
		}
		return e.String()
	}
	return fmt.Sprintf("%T", eng)
}

// checkBackend makes the first round trip: a distlock server is pinged
// (it tells a refused token and servers that do not share their locks), a
// Redlock quorum's nodes are all asked (a majority must answer, see
// checkNodes), any other engine is asked about one lock.
func (a *app) checkBackend(ctx context.Context, b *backend, setting string, grace time.Duration) error {
	switch e := b.eng.(type) {
	case *remote.Engine:
		role, err := a.checkServer(ctx, e, setting)
		b.role = role
		return err
	case *quorum.Engine:
		return checkNodes(ctx, e, setting, grace)
	}
	err, stop := firstTrip(ctx, func(ctx context.Context) error {
		_, err := b.eng.Inspect(ctx, checkName)
		return err
	})
	switch {
	case err == nil:
		return nil
	case stop != nil:
		return stop
	case notMigrated(err):
		return usageErr("the backend (%s) has no distlock tables: run 'distlock postgres init' first (%v)", b.where, err)
	}
	return &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach %s: %v.\nCheck that it is running there and that %s points at it.",
		b.where, err, setting)}
}

// firstTrip makes the first round trip within pingTimeout; stop is ctx's
// error when a signal ended it (see interrupted).
func firstTrip(ctx context.Context, trip func(context.Context) error) (err, stop error) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err = trip(pctx); err != nil {
		stop = interrupted(ctx)
	}
	return err, stop
}

// checkServer pings a distlock server, checks that it takes the token
// (DISTLOCK_TOKEN) and returns the role the server gave it.
func (a *app) checkServer(ctx context.Context, eng *remote.Engine, setting string) (role string, _ error) {
	err, stop := firstTrip(ctx, func(ctx context.Context) error {
		info, err := eng.Ping(ctx)
		role = info.Role
		return err
	})
	switch {
	case err == nil:
		return role, nil
	case stop != nil:
		return "", stop
	case errors.Is(err, remote.ErrBackendMismatch):
		return "", usageErr("the distlock servers in %s do not share their locks: %v.\nName several servers only when they run on one shared backend (Redis, etcd, PostgreSQL).",
			setting, err)
	case errors.Is(err, remote.ErrUnauthorized) || errors.Is(err, remote.ErrForbidden):
		return "", usageErr("the %s refused the token: %v.\nSet %s to a token of the server (write role to take locks).",
			eng, err, envToken)
	}
	return "", &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach the %s: %v.\n"+
		"Check that distlock serve runs there and that %s points at it.", eng, err, setting)}
}

// leaseFate says what closing a backend does to the leases its client
// still holds.
type leaseFate int

const (
	// releaseLeases releases them: the command's locks end with it.
	releaseLeases leaseFate = iota
	// keepLeases leaves them held until their ttl: distlock acquire and
	// extend hand their lease to the shell script.
	keepLeases
)

// close closes the client (releasing the leases it still holds, or
// keeping them, as fate says) and the engine with its connections.
func (b *backend) close(fate leaseFate) {
	if fate == releaseLeases {
		_ = b.client.Close()
	}
	_ = b.eng.Close()
}
