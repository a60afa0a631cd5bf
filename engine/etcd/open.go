package etcd

import (
	"context"
	"crypto/tls"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/engine"
)

// The URL schemes this package registers with engine.Register (a program
// links them with import _ "github.com/distlock/distlock/engine/etcd"):
//
//	etcd://[user:password@]host:2379[,host2:2379...][?prefix=distlock/&dial_timeout=5s&min_ttl=2s]
//	etcds://...   the same over TLS (the system's roots)
//
// The user and password are etcd's authentication (when it is on).
// prefix is WithPrefix (default DefaultPrefix), min_ttl WithMinTTL,
// dial_timeout the client's (default 5s).
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

func open(_ context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
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
	cfg := clientv3.Config{DialTimeout: dial, Logger: zap.NewNop()}
	scheme := "http://"
	if h.Scheme == SchemeTLS {
		scheme, cfg.TLS = "https://", &tls.Config{MinVersion: tls.VersionTLS12}
	}
	for _, host := range h.Hosts {
		cfg.Endpoints = append(cfg.Endpoints, scheme+host)
	}
	cfg.Username, cfg.Password = h.User()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	return New(cli, WithPrefix(prefix), WithMinTTL(minTTL), WithOwnedClient()), nil
}
