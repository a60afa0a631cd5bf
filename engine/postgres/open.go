package postgres

import (
	"context"
	"net/url"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
)

// The URL schemes this package registers with engine.Register (a program
// links them with import _ "github.com/distlock/distlock/engine/postgres"):
//
//	postgres://user:password@host:5432/db[?schema=distlock&listen=true&<pgx parameters>]
//	postgresql://...   the same
//
// schema is WithSchema (default DefaultSchema; made once with Migrate, or
// distlock postgres init); listen=false is WithoutListen. Every other
// parameter is pgx's (sslmode, connect_timeout, pool_max_conns, ...).
const Scheme = "postgres"

func init() {
	engine.Register(Scheme, open)
	engine.Register("postgresql", open)
}

func open(ctx context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	q := u.Query()
	if err := engine.RefuseRepeated(rawURL, q); err != nil {
		return nil, err
	}
	own := engine.NewURLParams(rawURL, url.Values{"schema": q["schema"], "listen": q["listen"]})
	opts := []Option{WithSchema(own.String("schema", DefaultSchema)), WithOwnedPool()}
	if !own.Bool("listen", true) {
		opts = append(opts, WithoutListen())
	}
	if err := own.Done(); err != nil {
		return nil, err
	}
	q.Del("schema")
	q.Del("listen")
	u.RawQuery = q.Encode()
	pcfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	socks := &sockets{}
	pcfg.ConnConfig.DialFunc = socks.dialer(pcfg.ConnConfig.DialFunc)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, engine.BadURL(rawURL, "", err.Error())
	}
	opts = append(opts, func(c *config) { c.socks = socks })
	e, err := New(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, engine.BadURL(rawURL, "schema", err.Error())
	}
	return e, nil
}
