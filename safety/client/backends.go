package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/distlock/distlock/engine"
	etcdengine "github.com/distlock/distlock/engine/etcd"
	"github.com/distlock/distlock/engine/etcd/etcdfence"
	pgengine "github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// PGSchema is the engine/postgres schema the lab's locks live in.
const PGSchema = pgengine.DefaultSchema

// newBackendEngine builds the etcd or PostgreSQL engine of cfg; close
// closes its connections (after the engine).
func newBackendEngine(cfg Config) (engine.Engine, func(), error) {
	switch cfg.Backend {
	case BackendEtcd:
		cli, err := NewEtcdClient(cfg.Nodes, cfg.TTL)
		if err != nil {
			return nil, nil, err
		}
		return etcdengine.New(cli), func() { _ = cli.Close() }, nil
	case BackendPostgres:
		if len(cfg.Nodes) != 1 {
			return nil, nil, fmt.Errorf("postgres: %d URLs", len(cfg.Nodes))
		}
		pool, err := NewPGPool(cfg.Nodes[0])
		if err != nil {
			return nil, nil, err
		}
		eng, err := pgengine.New(pool, pgengine.WithSchema(PGSchema))
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return eng, pool.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown backend %q", cfg.Backend)
}

// NewEtcdClient connects to the etcd members at endpoints (client URLs),
// with keepalives that notice a stopped member within about ttl/2.
func NewEtcdClient(endpoints []string, ttl time.Duration) (*clientv3.Client, error) {
	ka := max(ttl/4, 250*time.Millisecond)
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          time.Second,
		DialKeepAliveTime:    ka,
		DialKeepAliveTimeout: ka,
		Logger:               zap.NewNop(),
	})
}

// NewPGPool opens a pgx pool on url.
func NewPGPool(url string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = 8
	pc.ConnConfig.ConnectTimeout = time.Second
	return pgxpool.NewWithConfig(context.Background(), pc)
}

// etcd keys of the resource copies of lock name; the fenced copy's fence
// key is etcdfence.FenceKeyFor(EtcdDataKey(name)).
func EtcdDataKey(name string) string    { return "lab/res/" + name }
func EtcdControlKey(name string) string { return "lab/ctl/" + name }

func encodeState(s State) string { return strconv.FormatInt(s.Counter, 10) + "|" + s.Set }

func decodeState(v []byte) (State, error) {
	if len(v) == 0 {
		return State{}, nil
	}
	c, set, ok := strings.Cut(string(v), "|")
	n, err := strconv.ParseInt(c, 10, 64)
	if !ok || err != nil {
		return State{}, fmt.Errorf("resource: bad value %q", v)
	}
	return State{Counter: n, Set: set}, nil
}

// etcdStore keeps both copies in the lock's etcd cluster: the fenced one
// read and written by etcdfence transactions (the read is an OpGet in the
// guarded Txn, so it raises the mark too), the control with plain Get/Put.
type etcdStore struct {
	cli   *clientv3.Client
	guard *etcdfence.Guard
	name  string
}

func newEtcdStore(cfg Config) (Store, error) {
	cli, err := NewEtcdClient(cfg.Nodes, cfg.TTL)
	if err != nil {
		return nil, err
	}
	return &etcdStore{cli: cli, guard: etcdfence.New(cli), name: cfg.Name}, nil
}

func (s *etcdStore) Close() error { return s.cli.Close() }

func (s *etcdStore) fenceKey() string { return etcdfence.FenceKeyFor(EtcdDataKey(s.name)) }

func (s *etcdStore) ReadFenced(ctx context.Context, token uint64, holder string) (State, error) {
	resp, err := s.guard.Txn(ctx, s.fenceKey(), token, holder, clientv3.OpGet(EtcdDataKey(s.name)))
	if err != nil {
		return State{}, err
	}
	if kvs := resp[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		return decodeState(kvs[0].Value)
	}
	return State{}, nil
}

func (s *etcdStore) WriteFenced(ctx context.Context, token uint64, holder string, st State) error {
	_, err := s.guard.Txn(ctx, s.fenceKey(), token, holder, clientv3.OpPut(EtcdDataKey(s.name), encodeState(st)))
	return err
}

func (s *etcdStore) ReadControl(ctx context.Context) (State, error) {
	return etcdGet(ctx, s.cli, EtcdControlKey(s.name))
}

func (s *etcdStore) WriteControl(ctx context.Context, st State) error {
	_, err := s.cli.Put(ctx, EtcdControlKey(s.name), encodeState(st))
	return err
}

func etcdGet(ctx context.Context, cli *clientv3.Client, key string) (State, error) {
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return State{}, err
	}
	if len(resp.Kvs) == 0 {
		return State{}, nil
	}
	return decodeState(resp.Kvs[0].Value)
}

// ReadFinalEtcd reads both copies (after the run).
func ReadFinalEtcd(ctx context.Context, cli *clientv3.Client, name string) (fenced, control State, err error) {
	f, err1 := etcdGet(ctx, cli, EtcdDataKey(name))
	c, err2 := etcdGet(ctx, cli, EtcdControlKey(name))
	return f, c, errors.Join(err1, err2)
}

// The PostgreSQL resource: two tables of the lock's database, one row per
// lock name in each.
const (
	PGFencedTable  = "lab_resource"
	PGControlTable = "lab_control"
)

// PGSetup creates the resource tables (the lab calls it once per run,
// after postgres.Migrate).
func PGSetup(ctx context.Context, db *pgxpool.Pool) error {
	for _, t := range []string{PGFencedTable, PGControlTable} {
		if _, err := db.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+t+" (name text PRIMARY KEY, counter bigint NOT NULL, elems text NOT NULL)"); err != nil {
			return err
		}
	}
	return nil
}

// pgStore: the fenced copy is read and written in transactions that run
// pgfence's check first (the read's check raises the mark in HighestSeen
// mode, and share-locks the lock's row in Current mode); the control with
// plain autocommit statements.
type pgStore struct {
	pool  *pgxpool.Pool
	guard *pgfence.Guard
	name  string
}

func newPGStore(cfg Config) (Store, error) {
	pool, err := NewPGPool(cfg.Nodes[0])
	if err != nil {
		return nil, err
	}
	mode := pgfence.Current
	if cfg.PGFence == PGHighestSeen {
		mode = pgfence.HighestSeen
	}
	return &pgStore{pool: pool, guard: pgfence.New(PGSchema, mode), name: cfg.Name}, nil
}

func (s *pgStore) Close() error { s.pool.Close(); return nil }

func pgRead(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, table, name string) (State, error) {
	var st State
	err := q.QueryRow(ctx, "SELECT counter, elems FROM "+table+" WHERE name = $1", name).Scan(&st.Counter, &st.Set)
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, nil
	}
	return st, err
}

const pgUpsert = " (name, counter, elems) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET counter = EXCLUDED.counter, elems = EXCLUDED.elems"

func (s *pgStore) ReadFenced(ctx context.Context, token uint64, holder string) (State, error) {
	var st State
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.guard.Check(ctx, tx, s.name, token, holder); err != nil {
			return err
		}
		var err error
		st, err = pgRead(ctx, tx, PGFencedTable, s.name)
		return err
	})
	return st, err
}

func (s *pgStore) WriteFenced(ctx context.Context, token uint64, holder string, st State) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.guard.Check(ctx, tx, s.name, token, holder); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+PGFencedTable+pgUpsert, s.name, st.Counter, st.Set)
		return err
	})
}

func (s *pgStore) ReadControl(ctx context.Context) (State, error) {
	return pgRead(ctx, s.pool, PGControlTable, s.name)
}

func (s *pgStore) WriteControl(ctx context.Context, st State) error {
	_, err := s.pool.Exec(ctx, "INSERT INTO "+PGControlTable+pgUpsert, s.name, st.Counter, st.Set)
	return err
}

// ReadFinalPG reads both copies (after the run).
func ReadFinalPG(ctx context.Context, pool *pgxpool.Pool, name string) (fenced, control State, err error) {
	f, err1 := pgRead(ctx, pool, PGFencedTable, name)
	c, err2 := pgRead(ctx, pool, PGControlTable, name)
	return f, c, errors.Join(err1, err2)
}
