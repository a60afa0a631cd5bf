package zookeeper

import (
	"context"

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
const Scheme = "zookeeper"

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
	return Dial(ctx, h.Hosts, session, WithRoot(root))
}
