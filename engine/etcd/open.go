package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// The URL schemes this package registers with engine.Register (a program
// links them with import _ "github.com/distlock/distlock/engine/etcd"):
//
//	etcd://[user:password@]host:2379[,host2:2379...][?prefix=distlock/&dial_timeout=5s&min_ttl=2s]
//	etcds://...   the same over TLS (the system's roots)
//
// The user and password are etcd's authentication (when it is on).
// prefix is WithPrefix (default DefaultPrefix), min_ttl WithMinTTL (whole
// seconds, at most 24 h), dial_timeout the client's (default 5s). Open
// contacts the cluster only for a user (etcd's client fetches a token
// then), within dial_timeout and the context's deadline: a cluster that
// does not answer is a *BackendError, a refused password a bad URL.
const (
	Scheme    = "etcd"
	SchemeTLS = "etcds"
)

// DefaultDialTimeout is an opened engine's dial timeout.
const DefaultDialTimeout = 5 * time.Second

func init() {
	engine.Register(Scheme, open)
	engine.Register(SchemeTLS, open)
}

func open(ctx context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
	h, err := engine.ParseHostList(rawURL)
	if err != nil {
		return nil, err
	}
	if h.Path != "" {
		return nil, engine.BadURL(rawURL, "", "an etcd URL has no path: give the key prefix as ?prefix=")
	}
	p := engine.NewURLParams(rawURL, h.Query)
	prefix := p.String("prefix", DefaultPrefix)
	dial := p.Duration("dial_timeout", DefaultDialTimeout)
	minTTL := p.Duration("min_ttl", MinTTL)
	if err := p.Done(); err != nil {
		return nil, err
	}
	if err := checkMinTTL(rawURL, minTTL); err != nil {
		return nil, err
	}
	cfg := clientv3.Config{DialTimeout: dial, Logger: zap.NewNop()}
	scheme := "http://"
	if h.Scheme == SchemeTLS {
		scheme, cfg.TLS = "https://", &tls.Config{MinVersion: tls.VersionTLS12}
	}
	for _, host := range h.Hosts {
		if err := checkHost(rawURL, host); err != nil {
			return nil, err
		}
		cfg.Endpoints = append(cfg.Endpoints, scheme+host)
	}
	cfg.Username, cfg.Password = h.User()
	cli, err := connect(ctx, rawURL, cfg)
	if err != nil {
		return nil, err
	}
	return New(cli, WithPrefix(prefix), WithMinTTL(minTTL), WithOwnedClient()), nil
}

// checkHost refuses a host that is not host[:port] with a port from 1 to
// 65535, before any dial.
func checkHost(rawURL, host string) error {
	u, err := url.Parse("http://" + host)
	if err == nil && u.Host == host && u.User == nil && u.Path == "" {
		port := u.Port()
		if port == "" {
			return nil
		}
		if n, err := strconv.Atoi(port); err == nil && n >= 1 && n <= 65535 {
			return nil
		}
	}
	return engine.BadURL(rawURL, "", fmt.Sprintf("host %q is not host:port with a port from 1 to 65535", host))
}

// checkMinTTL refuses a min_ttl that etcd cannot keep as it is (not whole
// seconds: etcd grants whole seconds) or above the longest ttl distlock
// takes (rules.MaxTTL): every lease would outlast what was asked.
func checkMinTTL(rawURL string, d time.Duration) error {
	switch {
	case d%time.Second != 0:
		return engine.BadURL(rawURL, "min_ttl", fmt.Sprintf("%v is not a whole number of seconds (etcd keeps ttls in whole seconds)", d))
	case d > rules.MaxTTL:
		return engine.BadURL(rawURL, "min_ttl", fmt.Sprintf("%v is above the longest ttl, %v", d, rules.MaxTTL))
	}
	return nil
}

// connect makes the etcd client of cfg within ctx's deadline. It contacts
// the cluster only when cfg has a user name (clientv3 then fetches an auth
// token): a cluster that does not answer is a *BackendError, a refused
// user or password a bad URL (no retry mends it).
func connect(ctx context.Context, rawURL string, cfg clientv3.Config) (*clientv3.Client, error) {
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, backendErr("connect to "+strings.Join(cfg.Endpoints, ","), context.DeadlineExceeded)
		}
		cfg.DialTimeout = min(cfg.DialTimeout, left)
	}
	cli, err := clientv3.New(cfg)
	switch {
	case err == nil:
		return cli, nil
	case errors.Is(err, rpctypes.ErrAuthFailed):
		return nil, engine.BadURL(rawURL, "", "etcd refused the user name and password: "+err.Error())
	}
	return nil, backendErr("connect to "+strings.Join(cfg.Endpoints, ","), err)
}
