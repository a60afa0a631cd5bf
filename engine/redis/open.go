package redis

import (
	"cmp"
	"context"
	"net/url"
	"regexp"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// The URL schemes this package registers with engine.Register (see
// docs/API.md, "Backends by URL"):
//
//	redis://[[user]:password@]host:6379[/db][?go-redis options]   one server (rediss:// for TLS)
//	redis+cluster://[[user]:password@]host:6379[?addr=host2:6379]  a Redis Cluster (rediss+cluster://)
//	redis+sentinel://[[user]:password@]s1:26379?master_name=m[&addr=s2:26379]  Sentinel (rediss+sentinel://)
//	redlock://[[user]:password@]h1:6379,h2:6379,h3:6379[/db][?node_timeout=50ms&tls=true]
//	redis://a:6379,rediss://b:6380,redis://c:6379                 Redlock over the listed nodes
//
// The go-redis options are its URL parameters (dial_timeout, read_timeout,
// pool_size, protocol, skip_verify, ...); a parameter go-redis does not
// know, one given twice (addr excepted) and a value go-redis accepts but
// cannot use (see checkOptions) are errors. A Sentinel URL's userinfo is
// the Sentinels' credentials; the master's are ?username= and ?password=.
// redis-cluster:// and rediss-cluster:// are accepted for redis+cluster://
// and rediss+cluster://.
var schemes = []string{"redis", "rediss", "redis+cluster", "rediss+cluster", "redis-cluster", "rediss-cluster",
	"redis+sentinel", "rediss+sentinel", redlockScheme}

const redlockScheme = "redlock"

func init() {
	for _, s := range schemes {
		engine.Register(s, open)
	}
}

// open opens one node, a Redlock quorum (redlock:// or a list of URLs).
func open(ctx context.Context, rawURL string, cfg engine.OpenConfig) (engine.Engine, error) {
	if strings.HasPrefix(strings.ToLower(rawURL), redlockScheme+"://") {
		urls, timeout, err := redlockNodes(rawURL)
		if err != nil {
			return nil, err
		}
		if timeout > 0 {
			cfg.NodeTimeout = timeout
		}
		return openQuorum(ctx, rawURL, urls, cfg)
	}
	if strings.Contains(rawURL, ",") {
		var urls []string
		for _, u := range strings.Split(rawURL, ",") {
			if u = strings.TrimSpace(u); u == "" {
				return nil, engine.BadURL(rawURL, "", "empty URL in the list: separate URLs with single commas")
			}
			urls = append(urls, u)
		}
		return openQuorum(ctx, rawURL, urls, cfg)
	}
	rdb, err := newClient(rawURL)
	if err != nil {
		return nil, err
	}
	eng, err := New(rdb, WithOwnedClient())
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return eng, nil
}

// openQuorum opens every node URL with its own scheme's opener and makes
// the Redlock quorum of them.
func openQuorum(ctx context.Context, rawURL string, urls []string, cfg engine.OpenConfig) (engine.Engine, error) {
	nodes := make([]engine.Engine, 0, len(urls))
	closeAll := func() {
		for _, n := range nodes {
			_ = n.Close()
		}
	}
	for _, u := range urls {
		if s, _, _ := strings.Cut(strings.ToLower(u), "://"); s == redlockScheme || !strings.HasPrefix(s, "redis") {
			closeAll()
			return nil, engine.BadURL(rawURL, "", "a Redlock node is a redis://, rediss://, redis+cluster:// or redis+sentinel:// URL, not "+engine.RedactURL(u))
		}
		n, err := open(ctx, u, cfg)
		if err != nil {
			closeAll()
			return nil, err
		}
		nodes = append(nodes, n)
	}
	var opts []quorum.Option
	if cfg.NodeTimeout > 0 {
		opts = append(opts, quorum.WithNodeTimeout(cfg.NodeTimeout))
	}
	if cfg.NodeErrors != nil {
		opts = append(opts, quorum.WithNodeErrors(cfg.NodeErrors))
	}
	q, err := quorum.New(nodes, opts...)
	if err != nil {
		closeAll()
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	return q, nil
}

// redlockNodes turns redlock://[userinfo@]h1,h2[/db][?query] into one
// node URL per host, each with the userinfo, the db and the go-redis
// parameters; node_timeout and tls are the quorum's.
func redlockNodes(rawURL string) (urls []string, nodeTimeout time.Duration, err error) {
	h, err := engine.ParseHostList(rawURL)
	if err != nil {
		return nil, 0, err
	}
	q := h.Query
	if err := engine.RefuseRepeated(rawURL, q); err != nil {
		return nil, 0, err
	}
	own := engine.NewURLParams(rawURL, url.Values{"node_timeout": q["node_timeout"], "tls": q["tls"]})
	nodeTimeout = own.Duration("node_timeout", 0)
	tls := own.Bool("tls", false)
	if err := own.Done(); err != nil {
		return nil, 0, err
	}
	q.Del("node_timeout")
	q.Del("tls")
	prefix, suffix := "redis://", ""
	if tls {
		prefix = "rediss://"
	}
	if h.UserInfo != "" {
		prefix += h.UserInfo + "@"
	}
	if h.Path != "" {
		suffix = "/" + h.Path
	}
	if len(q) > 0 {
		suffix += "?" + q.Encode()
	}
	for _, host := range h.Hosts {
		urls = append(urls, prefix+host+suffix)
	}
	return urls, nodeTimeout, nil
}

// newClient makes the go-redis client of one node's URL. Context
// deadlines are honoured, so a renewal or release that Redis does not
// answer is bounded by its own deadline rather than by a socket timeout;
// and a node where nothing listens fails fast (fewer dial attempts per
// command: the lease and the wait loop retry on their own). A URL whose
// options go-redis accepts but cannot use is refused (checkOptions).
func newClient(rawURL string) (goredis.UniversalClient, error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	base, kind, _ := strings.Cut(strings.Replace(scheme, "-cluster", "+cluster", 1), "+")
	if err := checkRepeated(rawURL, rest); err != nil {
		return nil, err
	}
	switch kind {
	case "cluster":
		opts, err := goredis.ParseClusterURL(base + "://" + rest)
		if err != nil {
			return nil, goRedisError(rawURL, err)
		}
		if err := checkClusterOptions(rawURL, rest, opts); err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled = true
		opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
		return goredis.NewClusterClient(opts), nil
	case "sentinel":
		opts, err := goredis.ParseFailoverURL(base + "://" + rest)
		if err != nil {
			return nil, goRedisError(rawURL, err)
		}
		if opts.MasterName == "" {
			return nil, engine.BadURL(rawURL, "master_name", "a Sentinel URL names its master: ?master_name=NAME")
		}
		if err := checkSentinelOptions(rawURL, opts); err != nil {
			return nil, err
		}
		opts.ContextTimeoutEnabled = true
		opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
		return goredis.NewFailoverClient(opts), nil
	}
	opts, err := goredis.ParseURL(base + "://" + rest)
	if err != nil {
		return nil, goRedisError(rawURL, err)
	}
	if err := checkOptions(rawURL, poolOptions{opts.PoolSize, opts.MinIdleConns, opts.MaxIdleConns, opts.MaxActiveConns,
		opts.MaxRetries, opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout}); err != nil {
		return nil, err
	}
	opts.ContextTimeoutEnabled = true
	opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
	return goredis.NewClient(opts), nil
}

// checkRepeated refuses a query parameter given twice (go-redis would
// take one of the values silently); rest is the URL after "scheme://". A
// query that does not parse is left to go-redis to report.
func checkRepeated(rawURL, rest string) error {
	_, query, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil
	}
	return engine.RefuseRepeated(rawURL, q, "addr")
}

// goRedisParam finds the parameter that go-redis's URL errors name:
// "unexpected option: NAME[, ...]", "invalid NAME number|duration|boolean",
// "unable to parse addr param".
var goRedisParam = regexp.MustCompile(`^redis: (?:unexpected option: ([^,\s]+)|invalid (\w+) (?:number|duration|boolean): |unable to parse (addr) param)`)

// goRedisError is the *engine.URLError of go-redis's refusal err of
// rawURL, with the parameter its message names in Param.
func goRedisError(rawURL string, err error) error {
	param := ""
	if m := goRedisParam.FindStringSubmatch(err.Error()); m != nil {
		param = m[1] + m[2] + m[3]
	}
	if param == "database" {
		// "invalid database number: %q" is the path's, "...: strconv..." the db parameter's.
		param = ""
		if strings.HasPrefix(err.Error(), "redis: invalid database number: strconv") {
			param = "db"
		}
	}
	return engine.BadURL(rawURL, param, err.Error())
}

// poolOptions are the go-redis options that every kind of client has and
// that go-redis accepts from a URL with values it cannot use.
type poolOptions struct {
	poolSize, minIdleConns, maxIdleConns, maxActiveConns int
	maxRetries                                           int
	dialTimeout, readTimeout, writeTimeout               time.Duration
}

// checkOptions refuses the values of o that break the client: a negative
// pool size panics (or breaks every call), max_retries below -1 (-1 is no
// retry) and a dial timeout of 0 or less (which the URL parser turns into
// -1) fail every call, and read and write timeouts below go-redis's -1 (no
// timeout) and -2 (no deadline) are meaningless.
func checkOptions(rawURL string, o poolOptions) error {
	for _, c := range []struct {
		param string
		bad   bool
		want  string
	}{
		{"pool_size", o.poolSize < 0, "a number of connections, not negative"},
		{"min_idle_conns", o.minIdleConns < 0, "a number of connections, not negative"},
		{"max_idle_conns", o.maxIdleConns < 0, "a number of connections, not negative"},
		{"max_active_conns", o.maxActiveConns < 0, "a number of connections, not negative"},
		{"max_retries", o.maxRetries < -1, "a number of retries, or -1 for none"},
		{"dial_timeout", o.dialTimeout < 0, "a positive duration (a dial that may not take any time always fails)"},
		{"read_timeout", o.readTimeout < -2, "a positive duration, -1 (none) or -2 (no deadline)"},
		{"write_timeout", o.writeTimeout < -2, "a positive duration, -1 (none) or -2 (no deadline)"},
	} {
		if c.bad {
			return engine.BadURL(rawURL, c.param, "want "+c.want)
		}
	}
	return nil
}

// checkClusterOptions refuses what checkOptions refuses, a database
// (Cluster has only db 0, and go-redis ignores the URL's path),
// max_redirects below -1 (with which go-redis sends nothing and reports
// no error), and reads from replicas (read_only, route_by_latency,
// route_randomly): Inspect and List read the lock keys, which a replica
// may not have yet.
func checkClusterOptions(rawURL, rest string, o *goredis.ClusterOptions) error {
	if err := checkOptions(rawURL, poolOptions{o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns,
		o.MaxRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout}); err != nil {
		return err
	}
	if u, err := url.Parse("redis://" + rest); err == nil && strings.Trim(u.Path, "/") != "" {
		return engine.BadURL(rawURL, "", "a Redis Cluster has no database to select: no /db path")
	}
	if o.MaxRedirects < -1 {
		return engine.BadURL(rawURL, "max_redirects", "want a number of redirects, or -1 for none")
	}
	return refuseReplicaReads(rawURL, o.ReadOnly, o.RouteByLatency, o.RouteRandomly, "read_only")
}

// checkSentinelOptions refuses what checkOptions refuses, and routing to
// replicas (replica_only, route_by_latency, route_randomly): go-redis's
// failover client panics on the routing options, and locks are written on
// the master.
func checkSentinelOptions(rawURL string, o *goredis.FailoverOptions) error {
	if err := checkOptions(rawURL, poolOptions{o.PoolSize, o.MinIdleConns, o.MaxIdleConns, o.MaxActiveConns,
		o.MaxRetries, o.DialTimeout, o.ReadTimeout, o.WriteTimeout}); err != nil {
		return err
	}
	return refuseReplicaReads(rawURL, o.ReplicaOnly, o.RouteByLatency, o.RouteRandomly, "replica_only")
}

// refuseReplicaReads refuses the options that send commands to replicas;
// replicas is the name of the option readOnly comes from.
func refuseReplicaReads(rawURL string, readOnly, byLatency, randomly bool, replicas string) error {
	for _, c := range []struct {
		param string
		set   bool
	}{{replicas, readOnly}, {"route_by_latency", byLatency}, {"route_randomly", randomly}} {
		if c.set {
			return engine.BadURL(rawURL, c.param, "distlock reads and writes its locks on the master only")
		}
	}
	return nil
}
