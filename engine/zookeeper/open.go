package zookeeper

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
)

// Scheme is the URL scheme this package registers with engine.Register (a
// program links it with import _ "github.com/distlock/distlock/engine/zookeeper"):
//
//	zookeeper://host:2181[,host2:2181...][?root=/distlock&session_timeout=40s]
//
// root is WithRoot (default DefaultRoot), session_timeout the session
// timeout Dial asks for (default DefaultSessionTimeout). The engine opened
// owns its connection.
//
// Opening waits for the ensemble to grant the session (the engine needs
// the session timeout it grants), within the context's deadline, or
// within DefaultOpenTimeout when the context has none: an ensemble that
// grants none in that time is a *BackendError, not a bad URL.
const Scheme = "zookeeper"

// DefaultOpenTimeout bounds the wait of engine.Open (and distlock.Open)
// for a session when its context has no deadline.
const DefaultOpenTimeout = 5 * time.Second

func init() { engine.Register(Scheme, open) }

func open(ctx context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
	h, err := engine.ParseHostList(rawURL)
	if err != nil {
		return nil, err
	}
	if h.Path != "" || h.UserInfo != "" {
		return nil, engine.BadURL(rawURL, "", "a zookeeper URL has no path nor user: give the root as ?root=")
	}
	p := engine.NewURLParams(rawURL, h.Query)
	root := p.String("root", DefaultRoot)
	session := p.Duration("session_timeout", DefaultSessionTimeout)
	if err := p.Done(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultOpenTimeout)
		defer cancel()
	}
	e, err := Dial(ctx, h.Hosts, session, WithRoot(root))
	if err != nil {
		var be *BackendError
		if errors.As(err, &be) {
			be.Op = "open a session on " + strings.Join(h.Hosts, ",")
		}
		return nil, err
	}
	return e, nil
}
