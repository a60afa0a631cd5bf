package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/distlock/distlock"
	zkengine "github.com/distlock/distlock/engine/zookeeper"
)

// envZooKeeper names the ZooKeeper servers: DISTLOCK_ZOOKEEPER=a:2181,b:2181.
const envZooKeeper = "DISTLOCK_ZOOKEEPER"

// zookeeperHelp documents the backend, for the help texts.
const zookeeperHelp = `  DISTLOCK_ZOOKEEPER=host:2181[,host2:2181...]   a ZooKeeper ensemble: a ttl
                 may not exceed the session timeout the ensemble grants
                 (asked: 40s; its maxSessionTimeout must allow it).
`

// openZooKeeper connects to the ZooKeeper ensemble at the comma-separated
// host:port list and waits for a session (the ensemble answered).
func (a *app) openZooKeeper(ctx context.Context, servers string) (*backend, error) {
	var list []string
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s == "" || strings.Contains(s, "://") {
			return nil, usageErr("cannot use %q in %s=%q.\nUse the form host:2181[,host2:2181...].", s, envZooKeeper, servers)
		}
		list = append(list, s)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	eng, err := zkengine.Dial(pctx, list, 0)
	cancel()
	if err != nil {
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		var be *zkengine.BackendError
		if errors.As(err, &be) {
			return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach ZooKeeper at %s: %v.\nCheck %s.", servers, err, envZooKeeper)}
		}
		return nil, usageErr("cannot use %q as ZooKeeper servers: %v.", servers, err)
	}
	return &backend{client: distlock.New(eng), eng: eng, where: "zookeeper " + strings.Join(list, ",")}, nil
}
