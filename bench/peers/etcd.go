package peers

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
)

// newEtcdClient returns an etcd client of the endpoints whose gRPC calls
// count into c: a unary call is one request and one call; a stream opened
// (a watch, a lease keepalive) is one call and one stream, and each message
// sent on it one request.
func newEtcdClient(endpoints []string, c *Counter) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no etcd cluster of that size in this run")
	}
	cfg := clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	}
	if c != nil {
		cfg.DialOptions = []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				c.add(1)
				c.addMethod(method)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				c.calls.Add(1)
				c.streams.Add(1)
				s, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countStream{s, c, method}, nil
			}),
		}
	}
	return clientv3.New(cfg)
}

// countStream counts the messages sent on a gRPC stream.
type countStream struct {
	grpc.ClientStream
	c      *Counter
	method string
}

func (s countStream) SendMsg(m any) error {
	s.c.requests.Add(1)
	s.c.addMethod(s.method)
	return s.ClientStream.SendMsg(m)
}

// EtcdDistlock is distlock's etcd engine on the cluster of the given size,
// default options (ttl 30s, auto-renewal on).
func EtcdDistlock(members int) Variant {
	return Variant{
		Name: fmt.Sprintf("distlock (etcd, %d member%s)", members, plural(members)), Lib: "distlock", Kind: Subject, Backend: "etcd", Members: members,
		Settings: "engine/etcd, defaults (ttl 30s, auto-renewal); one clientv3.Client",
		New: func(t Target) (Locker, error) {
			cli, err := newEtcdClient(t.Etcd[members], t.Counter)
			if err != nil {
				return nil, err
			}
			eng := etcdengine.New(cli)
			return &etcdDistlock{
				distlockLocker: distlockLocker{client: distlock.New(eng), opts: distlockOpts(t, nil)},
				eng:            eng, cli: cli,
			}, nil
		},
	}
}

type etcdDistlock struct {
	distlockLocker
	eng *etcdengine.Engine
	cli *clientv3.Client
}

func (l *etcdDistlock) Close() error {
	return errors.Join(l.client.Close(), l.eng.Close(), l.cli.Close())
}

// EtcdMutex is etcd's own concurrency.Mutex on the cluster of the given
// size, as its documentation uses it: one Session (one lease, kept alive by
// the client) per Locker, a Mutex per acquisition on the name's prefix.
// The Session's ttl is the target's, in whole seconds (default 60 s).
func EtcdMutex(members int) Variant {
	return Variant{
		Name: fmt.Sprintf("concurrency.Mutex (etcd, %d member%s)", members, plural(members)), Lib: "etcd-concurrency", Kind: Peer, Backend: "etcd", Members: members,
		Settings: "go.etcd.io/etcd/client/v3/concurrency " + "v3.7.3" + ": one Session per Client, NewMutex+Lock/Unlock",
		New: func(t Target) (Locker, error) {
			cli, err := newEtcdClient(t.Etcd[members], t.Counter)
			if err != nil {
				return nil, err
			}
			var opts []concurrency.SessionOption
			if t.TTL > 0 {
				opts = append(opts, concurrency.WithTTL(int(max(t.TTL.Round(time.Second), time.Second)/time.Second)))
			}
			s, err := concurrency.NewSession(cli, opts...)
			if err != nil {
				_ = cli.Close()
				return nil, err
			}
			return &etcdMutex{cli: cli, s: s}, nil
		},
	}
}

type etcdMutex struct {
	cli *clientv3.Client
	s   *concurrency.Session
}

func (l *etcdMutex) Acquire(ctx context.Context, name string) (Held, error) {
	m := concurrency.NewMutex(l.s, "/bench-mutex/"+name)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return etcdMutexHeld{m}, nil
}

type etcdMutexHeld struct{ m *concurrency.Mutex }

func (h etcdMutexHeld) Release(ctx context.Context) error { return h.m.Unlock(ctx) }

// Close ends the Session (revoking its lease) and closes the client.
func (l *etcdMutex) Close() error {
	return errors.Join(l.s.Close(), l.cli.Close())
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
