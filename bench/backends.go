package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
	pgengine "github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// backends are the servers of the etcd and PostgreSQL scenarios, started
// on first use (only when such a scenario is selected) and stopped with
// the env: etcd clusters of one and three members (etcdtest: the etcd
// binary built from the module proxy at etcdtest.Version and cached, on
// loopback, --unsafe-no-fsync) and one PostgreSQL server (pgtest: initdb
// and pg_ctl, fsync off, synchronous_commit on) with distlock's schema
// migrated.
type backends struct {
	// serverCPU, when ≥ 0, is the CPU the etcd members and PostgreSQL are
	// pinned to (bench/run: the redis-servers' CPU).
	serverCPU int

	mu   sync.Mutex
	tb   *benchTB
	etcd map[int]*etcdtest.Cluster
	pg   *pgtest.Server
}

// etcdCluster returns the etcd cluster of n members, starting it first.
func (e *env) etcdCluster(n int) (c *etcdtest.Cluster, err error) {
	b := &e.back
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.etcd[n]; c != nil {
		return c, nil
	}
	if b.tb == nil {
		b.tb = &benchTB{}
	}
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(tbFatal); ok {
				err = fmt.Errorf("etcd cluster of %d: %s", n, f.msg)
				return
			}
			panic(r)
		}
	}()
	c = etcdtest.Start(b.tb, n)
	if b.serverCPU >= 0 {
		// The members are the harness's children (other children, such as
		// PostgreSQL's pg_ctl, are pinned too: harmless).
		for _, pid := range childPIDs() {
			if err := pinTree(pid, b.serverCPU); err != nil {
				fmt.Fprintf(os.Stderr, "pin etcd to CPU %d: %v\n", b.serverCPU, err)
			}
		}
	}
	if b.etcd == nil {
		b.etcd = map[int]*etcdtest.Cluster{}
	}
	b.etcd[n] = c
	return c, nil
}

// etcdEndpoints returns the client URLs of the clusters of the given sizes.
func (e *env) etcdEndpoints(sizes ...int) (map[int][]string, error) {
	out := map[int][]string{}
	for _, n := range sizes {
		c, err := e.etcdCluster(n)
		if err != nil {
			return nil, err
		}
		out[n] = c.Endpoints()
	}
	return out, nil
}

// etcdHeap returns the Go heap in use (go_memstats_heap_inuse_bytes) of
// every member of the cluster of n members, summed, from their /metrics.
func (e *env) etcdHeap(ctx context.Context, n int) (float64, error) {
	c, err := e.etcdCluster(n)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range c.Members {
		v, err := metric(ctx, m.Client+"/metrics", "go_memstats_heap_inuse_bytes")
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// metric reads one unlabelled gauge from a Prometheus text endpoint.
func metric(ctx context.Context, url, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", url, name)
}

// postgresURL returns the URL of the PostgreSQL server, starting it and
// migrating distlock's schema first.
func (e *env) postgresURL(ctx context.Context) (string, error) {
	b := &e.back
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pg == nil {
		s, err := pgtest.Start()
		if err != nil {
			return "", err
		}
		pool, err := pgxpool.New(ctx, s.URL())
		if err == nil {
			err = pgengine.Migrate(ctx, pool, pgengine.DefaultSchema)
			pool.Close()
		}
		if err != nil {
			s.Stop()
			return "", fmt.Errorf("postgres: migrate: %w", err)
		}
		b.pg = s
		if b.serverCPU >= 0 {
			pid, err := postmasterPID(filepath.Join(s.Dir, "data"))
			if err == nil {
				err = pinTree(pid, b.serverCPU)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "pin PostgreSQL to CPU %d: %v\n", b.serverCPU, err)
			}
		}
	}
	return b.pg.URL(), nil
}

// close stops every backend started.
func (b *backends) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pg != nil {
		b.pg.Stop()
		b.pg = nil
	}
	if b.tb != nil {
		b.tb.cleanup() // stops the etcd clusters, removes their directories
		b.tb, b.etcd = nil, nil
	}
}

// benchTB is the etcdtest.TB of the harness: Fatal unwinds to the caller
// (etcdCluster), cleanups run at close.
type benchTB struct {
	cleanups []func()
	dirs     []string
	failed   bool
}

type tbFatal struct{ msg string }

func (t *benchTB) Helper()                        {}
func (t *benchTB) Logf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (t *benchTB) Fatal(a ...any)                 { t.failed = true; panic(tbFatal{fmt.Sprint(a...)}) }
func (t *benchTB) Fatalf(format string, a ...any) { t.Fatal(fmt.Sprintf(format, a...)) }
func (t *benchTB) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *benchTB) Failed() bool                   { return t.failed }

func (t *benchTB) TempDir() string {
	dir, err := os.MkdirTemp("", "distlock-bench-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

func (t *benchTB) cleanup() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	t.cleanups = nil
	for _, d := range t.dirs {
		_ = os.RemoveAll(d)
	}
	t.dirs = nil
}
