package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestAgedGrant: a grant on a pooled lease that is not renewed for it (the
// lease was renewed a moment before, by the previous grant) is one
// request, and the holder's deadline is still no later than etcd's expiry
// of that lease, which counts from the send time of the lease's last
// renewal: before the first Acquire returned. Seen failing with the
// Client counting the validity from its own send time (Grant.Age
// ignored): the deadline lay after the lease's expiry.
func TestAgedGrant(t *testing.T) {
	cl := etcdtest.Start(t, 1)
	var reqs atomic.Int64
	c := distlock.New(etcdengine.New(countingClient(t, cl, &reqs)))
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = 10 * time.Second // a pooled lease carries a grant unrenewed for ttl/10
	const age = 300 * time.Millisecond
	for try := 0; ; try++ {
		l, err := c.Acquire(ctx, "aged", distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		renewedBy := time.Now() // the lease's grant or renewal was sent before
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The pooled lease ages: this wait is the test's input, not a
		// wait for another process.
		<-time.After(age - time.Since(renewedBy))
		reqs.Store(0)
		l, err = c.Acquire(ctx, "aged", distlock.WithTTL(ttl), distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		got := reqs.Load()
		if dl, expiry := l.Deadline(), renewedBy.Add(ttl); dl.After(expiry) {
			t.Errorf("the holder's deadline is %v after the lease's expiry", dl.Sub(expiry))
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got == 1 {
			if n := reqs.Load(); n != 2 {
				t.Errorf("acquire+release made %d requests, want 2", n)
			}
			return
		}
		// The machine stalled past ttl/10: the lease was renewed with the
		// grant, as it should be; try again.
		t.Logf("try %d: the grant made %d requests (lease renewed), %v after the previous grant", try, got, time.Since(renewedBy))
		if try == 4 {
			t.Fatalf("no grant on an unrenewed pooled lease in %d tries", try+1)
		}
	}
}

// countingClient returns an etcd client of cl that counts its requests
// into n: each unary call, and each message sent on a stream.
func countingClient(t *testing.T, cl *etcdtest.Cluster, n *atomic.Int64) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cl.Endpoints(), DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				n.Add(1)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				s, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countedStream{s, n}, nil
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// countedStream counts the messages sent on a gRPC stream.
type countedStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s countedStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}
