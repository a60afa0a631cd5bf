package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/remote"
)

// Environment variables that choose the backend.
const (
	envRedis  = "DISTLOCK_REDIS"
	envServer = "DISTLOCK_SERVER"
)

// pingTimeout bounds the first round trip, which tells an unreachable
// backend from a busy lock before any waiting starts. A command's wait
// budget (--wait) bounds it too: see acquireWith.
const pingTimeout = 5 * time.Second

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
` + zookeeperHelp

// backend is an open connection to the lock backend.
type backend struct {
	client *distlock.Client
	eng    engine.Engine   // one node, or the quorum of all nodes
	nodes  []engine.Engine // the node engines, in the order of rdbs
	rdbs   []goredis.UniversalClient
	addrs  []string // of rdbs, for messages: "10.0.0.5:6379" or "cluster a:6379,b:6379"
	where  string   // for messages: "redis 10.0.0.5:6379"
	// closers close what else the backend opened (an etcd client).
	closers []func()
}

// connect opens the backend of a one-shot command (see openBackend) with a
// context that SIGINT and SIGTERM cancel. done closes the backend
// (keepLeases: see backend.close) and stops the signal handling.
func (a *app) connect(cmd, redisURL string, keepLeases bool) (ctx context.Context, b *backend, done func(), err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	b, err = a.openBackend(ctx, cmd, redisURL)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return ctx, b, func() {
		b.close(keepLeases)
		stop()
	}, nil
}

// openBackend connects to the backend that the --redis flag (if not empty)
// or the environment names, and checks that it answers. Several URLs make a
// Redlock quorum; a majority of them must answer (see openNodes). Its errors are *cliError
// with the exit code and a hint.
func (a *app) openBackend(ctx context.Context, cmd, flagURL string) (*backend, error) {
	if servers := strings.TrimSpace(a.getenv(envZooKeeper)); servers != "" && strings.TrimSpace(flagURL) == "" {
		for _, other := range []string{envRedis, envServer, envEtcd, envPostgres} {
			if strings.TrimSpace(a.getenv(other)) != "" {
				return nil, usageErr("both %s and %s are set: unset one of them (or pass --redis URL to use Redis).", envZooKeeper, other)
			}
		}
		return a.openZooKeeper(ctx, servers)
	}
	if url := strings.TrimSpace(a.getenv(envPostgres)); url != "" && strings.TrimSpace(flagURL) == "" {
		for _, other := range []string{envRedis, envServer, envEtcd} {
			if strings.TrimSpace(a.getenv(other)) != "" {
				return nil, usageErr("both %s and %s are set: unset one of them (or pass --redis URL to use Redis).", envPostgres, other)
			}
		}
		return a.openPostgres(ctx, url)
	}
	if eps := strings.TrimSpace(a.getenv(envEtcd)); eps != "" && strings.TrimSpace(flagURL) == "" {
		for _, other := range []string{envRedis, envServer} {
			if strings.TrimSpace(a.getenv(other)) != "" {
				return nil, usageErr("both %s and %s are set: unset one of them (or pass --redis URL to use Redis).", envEtcd, other)
			}
		}
		return a.openEtcd(ctx, eps)
	}
	if srv := strings.TrimSpace(a.getenv(envServer)); srv != "" && strings.TrimSpace(flagURL) == "" {
		if strings.TrimSpace(a.getenv(envRedis)) != "" {
			return nil, usageErr("both %s and %s are set: unset one of them (or pass --redis URL to use Redis).", envRedis, envServer)
		}
		return a.openServer(ctx, srv)
	}
	urls, err := a.redisURLs(cmd, flagURL)
	if err != nil {
		return nil, err
	}
	nodeTimeout, err := a.nodeTimeout()
	if err != nil {
		return nil, err
	}
	ns, _, err := openNodes(ctx, urls, pingGrace(nodeTimeout))
	if err != nil {
		return nil, err
	}
	b := &backend{nodes: ns.engs, rdbs: ns.rdbs, addrs: ns.addrs}
	if len(urls) == 1 {
		b.eng, b.where = ns.engs[0], "redis "+b.addrs[0]
	} else {
		q, err := openQuorum(ns.engs, nodeTimeout)
		if err != nil {
			b.closeConns()
			return nil, err
		}
		b.eng, b.where = q, fmt.Sprintf("Redlock over %d nodes", len(urls))
	}
	b.client = distlock.New(b.eng)
	return b, nil
}

// newRedisClient makes the go-redis client of url: redis:// or rediss://
// for one server, redis-cluster:// or rediss-cluster:// for a Redis Cluster
// (go-redis's cluster URL: the host and every addr parameter are seeds).
// Context deadlines are honoured, so a renewal or release that Redis does
// not answer is bounded by its own deadline rather than by a socket
// timeout; and a node where nothing listens fails fast (fewer dial attempts
// per command: the lease and the wait loop retry on their own).
func newRedisClient(url string) (goredis.UniversalClient, string, error) {
	scheme, rest, _ := strings.Cut(url, "://")
	if base, ok := strings.CutSuffix(scheme, "-cluster"); ok && (base == "redis" || base == "rediss") {
		opts, err := goredis.ParseClusterURL(base + "://" + rest)
		if err != nil {
			return nil, "", usageErr("cannot use %q as a Redis Cluster URL: %v.\nUse the form "+
				"redis-cluster://[[user]:password@]host:6379[?addr=host2:6379&addr=host3:6379] (rediss-cluster:// for TLS).", redactURL(url), err)
		}
		opts.ContextTimeoutEnabled = true
		if opts.DialerRetries == 0 {
			opts.DialerRetries = 2
		}
		return goredis.NewClusterClient(opts), "cluster " + strings.Join(opts.Addrs, ","), nil
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, "", usageErr("cannot use %q as a Redis URL: %v.\nUse the form redis://[[user]:password@]host:6379[/db] "+
			"(rediss:// for TLS, redis-cluster://host:6379 for a Redis Cluster).", redactURL(url), err)
	}
	opts.ContextTimeoutEnabled = true
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 2
	}
	return goredis.NewClient(opts), opts.Addr, nil
}

// redisURLs picks the Redis URLs to use (several for Redlock), or says why
// there are none.
func (a *app) redisURLs(cmd, flagURL string) ([]string, error) {
	url := strings.TrimSpace(flagURL)
	if url == "" {
		url = strings.TrimSpace(a.getenv(envRedis))
	}
	if url == "" {
		return nil, usageErr("this command needs a shared lock backend, and none is configured: "+
			"set %s=redis://host:6379 (or pass --redis URL), or %s=http://host:7420 for a distlock server.\n"+
			"To see distlock work with nothing installed, run: distlock demo", envRedis, envServer)
	}
	var urls []string
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u == "" {
			return nil, usageErr("empty URL in the list %q: separate Redis URLs with single commas.", redactURL(url))
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// openServer connects to a distlock server and checks that it answers and
// takes the token (DISTLOCK_TOKEN).
func (a *app) openServer(ctx context.Context, url string) (*backend, error) {
	eng, err := remote.New(url, remote.WithToken(strings.TrimSpace(a.getenv(envToken))))
	if err != nil {
		return nil, usageErr("cannot use %q as a distlock server URL: %v.\nUse the form http://host:7420 (https:// for TLS), several separated by commas.",
			url, strings.TrimPrefix(err.Error(), "distlock/engine/remote: "))
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	_, err = eng.Ping(pctx)
	cancel()
	if err != nil {
		_ = eng.Close()
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		if errors.Is(err, remote.ErrBackendMismatch) {
			return nil, usageErr("the distlock servers in %s do not share their locks: %v.\nName several servers only when they run on one shared backend (Redis, etcd, PostgreSQL).",
				envServer, err)
		}
		if errors.Is(err, remote.ErrUnauthorized) || errors.Is(err, remote.ErrForbidden) {
			return nil, usageErr("the distlock server at %s refused the token: %v.\nSet %s to a token of the server (write role to take locks).",
				url, err, envToken)
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach the distlock server at %s: %v.\n"+
			"Check that distlock serve runs there and that %s points at it.", url, err, envServer)}
	}
	return &backend{client: distlock.New(eng), eng: eng, where: eng.String()}, nil
}

// close closes the client (releasing the leases it still holds, unless
// keepLeases), the engine and the connection.
func (b *backend) close(keepLeases bool) {
	if !keepLeases {
		_ = b.client.Close()
	}
	_ = b.eng.Close()
	b.closeConns()
}

func (b *backend) closeConns() {
	for _, rdb := range b.rdbs {
		_ = rdb.Close()
	}
	for _, c := range b.closers {
		c()
	}
}

// redactURL hides a password in a URL, for messages.
func redactURL(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "****@" + rest[at+1:]
	}
	return scheme + "://" + rest
}
