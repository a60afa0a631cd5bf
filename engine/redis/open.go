package redis

import (
	"cmp"
	"context"
	"net/url"
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
// know is an error. redis-cluster:// and rediss-cluster:// are accepted
// for redis+cluster:// and rediss+cluster://.
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
// command: the lease and the wait loop retry on their own).
func newClient(rawURL string) (goredis.UniversalClient, error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	scheme = strings.ToLower(scheme)
	base, kind, _ := strings.Cut(strings.Replace(scheme, "-cluster", "+cluster", 1), "+")
	switch kind {
	case "cluster":
		opts, err := goredis.ParseClusterURL(base + "://" + rest)
		if err != nil {
			return nil, engine.BadURL(rawURL, "", err.Error())
		}
		opts.ContextTimeoutEnabled = true
		opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
		return goredis.NewClusterClient(opts), nil
	case "sentinel":
		opts, err := goredis.ParseFailoverURL(base + "://" + rest)
		if err != nil {
			return nil, engine.BadURL(rawURL, "", err.Error())
		}
		if opts.MasterName == "" {
			return nil, engine.BadURL(rawURL, "master_name", "a Sentinel URL names its master: ?master_name=NAME")
		}
		opts.ContextTimeoutEnabled = true
		opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
		return goredis.NewFailoverClient(opts), nil
	}
	opts, err := goredis.ParseURL(base + "://" + rest)
	if err != nil {
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	opts.ContextTimeoutEnabled = true
	opts.DialerRetries = cmp.Or(opts.DialerRetries, 2)
	return goredis.NewClient(opts), nil
}
