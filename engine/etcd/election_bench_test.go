package etcd_test

import (
	"context"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/distlock/distlock"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// BenchmarkElectionHandover compares leader election on etcd, distlock's
// Campaign/Resign against etcd's own concurrency.Election, on one member in
// the same run: one op is a leader resigning, measured from the Resign call
// to the waiting campaigner's Campaign returning (p50 and p99 reported), and
// from a Proclaim to an observer seeing the new value.
//
//	cd engine/etcd && GOWORK=off go test -run '^$' -bench ElectionHandover -benchtime 200x .
func BenchmarkElectionHandover(b *testing.B) {
	cl := etcdtest.Start(b, 1)
	b.Run("distlock", func(b *testing.B) {
		ctx := context.Background()
		a := distlock.New(etcdengine.New(cl.Client(b)))
		c := distlock.New(etcdengine.New(cl.Client(b)))
		o := distlock.New(etcdengine.New(cl.Client(b)))
		b.Cleanup(func() { _ = a.Close(); _ = c.Close(); _ = o.Close() })
		obs, err := o.Observe(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		lead, err := a.Campaign(ctx, "bench", "v0")
		if err != nil {
			b.Fatal(err)
		}
		clients := [2]*distlock.Client{a, c}
		var handover, observed []time.Duration
		b.ResetTimer()
		for i := range b.N {
			next := make(chan *distlock.Leadership, 1)
			go func() {
				l, err := clients[(i+1)%2].Campaign(ctx, "bench", "v")
				if err != nil {
					b.Error(err)
				}
				next <- l
			}()
			waitQueued(b, ctx, o, "bench")
			t0 := time.Now()
			_ = lead.Resign(ctx)
			lead = <-next
			handover = append(handover, time.Since(t0))
			t1 := time.Now()
			want := "p" + time.Now().String()
			_ = lead.Proclaim(ctx, want)
			for st := range obs {
				if st.Value == want {
					break
				}
			}
			observed = append(observed, time.Since(t1))
		}
		b.StopTimer()
		report(b, handover, "handover")
		report(b, observed, "proclaim-seen")
	})
	b.Run("concurrency.Election", func(b *testing.B) {
		ctx := context.Background()
		sa, _ := concurrency.NewSession(cl.Client(b), concurrency.WithTTL(10))
		sc, _ := concurrency.NewSession(cl.Client(b), concurrency.WithTTL(10))
		so, _ := concurrency.NewSession(cl.Client(b), concurrency.WithTTL(10))
		b.Cleanup(func() { _ = sa.Close(); _ = sc.Close(); _ = so.Close() })
		es := [2]*concurrency.Election{concurrency.NewElection(sa, "bench-e"), concurrency.NewElection(sc, "bench-e")}
		obsCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		obs := concurrency.NewElection(so, "bench-e").Observe(obsCtx)
		if err := es[0].Campaign(ctx, "v0"); err != nil {
			b.Fatal(err)
		}
		var handover, observed []time.Duration
		b.ResetTimer()
		for i := range b.N {
			cur, nxt := es[i%2], es[(i+1)%2]
			done := make(chan struct{})
			go func() {
				if err := nxt.Campaign(ctx, "v"); err != nil {
					b.Error(err)
				}
				close(done)
			}()
			waitEtcdWaiter(b, ctx, cl, "bench-e")
			t0 := time.Now()
			_ = cur.Resign(ctx)
			<-done
			handover = append(handover, time.Since(t0))
			t1 := time.Now()
			want := "p" + time.Now().String()
			_ = nxt.Proclaim(ctx, want)
			for r := range obs {
				if string(r.Kvs[0].Value) == want {
					break
				}
			}
			observed = append(observed, time.Since(t1))
		}
		b.StopTimer()
		report(b, handover, "handover")
		report(b, observed, "proclaim-seen")
	})
}

// waitQueued waits until a campaigner waits for name.
func waitQueued(b *testing.B, ctx context.Context, c *distlock.Client, name string) {
	for {
		info, err := c.Inspect(ctx, name)
		if err == nil && info.Waiters > 0 {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// waitEtcdWaiter waits until two candidates' keys exist under the
// election's prefix (the leader's and the waiting campaigner's).
func waitEtcdWaiter(b *testing.B, ctx context.Context, cl *etcdtest.Cluster, prefix string) {
	cli := cl.Client(b)
	for {
		r, err := cli.Get(ctx, prefix+"/", clientv3WithPrefix()...)
		if err == nil && r.Count >= 2 {
			return
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// report adds the p50 and p99 of ds, in ms, to the benchmark's metrics.
func report(b *testing.B, ds []time.Duration, what string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
	b.ReportMetric(ms(0.5), what+"-p50-ms")
	b.ReportMetric(ms(0.99), what+"-p99-ms")
}

func clientv3WithPrefix() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
}
