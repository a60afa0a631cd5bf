package main

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
)

// envEtcd names the etcd endpoints: DISTLOCK_ETCD=http://a:2379,http://b:2379.
const envEtcd = "DISTLOCK_ETCD"

// openEtcd connects to the etcd cluster at the comma-separated endpoints
// and checks that it answers (a member reports its status).
func (a *app) openEtcd(ctx context.Context, endpoints string) (*backend, error) {
	var eps []string
	for _, e := range strings.Split(endpoints, ",") {
		if e = strings.TrimSpace(e); e == "" {
			return nil, usageErr("empty endpoint in %s=%q: separate etcd endpoints with single commas.", envEtcd, endpoints)
		}
		eps = append(eps, e)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: pingTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, usageErr("cannot use %q as etcd endpoints: %v.\nUse the form http://host:2379[,http://host2:2379...].", endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	var statusErr error
	for _, ep := range eps {
		if _, statusErr = cli.Status(pctx, ep); statusErr == nil {
			break
		}
	}
	cancel()
	if statusErr != nil {
		_ = cli.Close()
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach etcd at %s: %v.\nCheck %s.", endpoints, statusErr, envEtcd)}
	}
	eng := etcdengine.New(cli)
	b := &backend{client: distlock.New(eng), eng: eng, where: "etcd " + strings.Join(eps, ","), closers: []func(){func() { _ = cli.Close() }}}
	return b, nil
}
