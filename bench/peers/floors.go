package peers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strconv"
	"sync"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// pingGoRedis is the round-trip floor: a PING to acquire, a PING to release.
type pingGoRedis struct{ rdbs []*goredis.Client }

func (p *pingGoRedis) Acquire(ctx context.Context, _ string) (Held, error) {
	if err := p.pingAll(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pingGoRedis) Release(ctx context.Context) error { return p.pingAll(ctx) }

// pingAll pings every node, concurrently when there are several, and
// returns when all answered.
func (p *pingGoRedis) pingAll(ctx context.Context) error {
	if len(p.rdbs) == 1 {
		return p.rdbs[0].Ping(ctx).Err()
	}
	errs := make([]error, len(p.rdbs))
	var wg sync.WaitGroup
	for i, c := range p.rdbs {
		wg.Go(func() { errs[i] = c.Ping(ctx).Err() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *pingGoRedis) Close() error { return closeAll(p.rdbs) }

// FloorPing is two PINGs per operation with a tuned go-redis client; on five
// nodes, two rounds of five PINGs in parallel.
func FloorPing() Variant {
	return Variant{
		Name: "floor: 2 PINGs (go-redis)", Lib: "floor", Kind: Floor,
		Settings: "PING to acquire, PING to release; go-redis pool 128",
		New: func(t Target) (Locker, error) {
			p := &pingGoRedis{}
			for _, a := range t.Addrs {
				p.rdbs = append(p.rdbs, newGoRedis(a, tuned, t.Counter))
			}
			return p, nil
		},
	}
}

// pingRueidis is the round-trip floor with rueidis.
type pingRueidis struct{ c rueidis.Client }

func (p *pingRueidis) Acquire(ctx context.Context, _ string) (Held, error) {
	if err := p.ping(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pingRueidis) Release(ctx context.Context) error { return p.ping(ctx) }

func (p *pingRueidis) ping(ctx context.Context) error {
	return p.c.Do(ctx, p.c.B().Ping().Build()).Error()
}

func (p *pingRueidis) Close() error {
	p.c.Close()
	return nil
}

// FloorPingRueidis is two PINGs per operation with a default rueidis client
// (auto-pipelining).
func FloorPingRueidis() Variant {
	return Variant{
		Name: "floor: 2 PINGs (rueidis)", Lib: "floor", Kind: Floor,
		Settings: "PING to acquire, PING to release; rueidis defaults",
		New: func(t Target) (Locker, error) {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: t.Addrs[:1]})
			if err != nil {
				return nil, err
			}
			if t.Counter != nil {
				c = countingRueidis{Client: c, c: t.Counter}
			}
			return &pingRueidis{c: c}, nil
		},
	}
}

// setnxLocker is the least a safe single-node lock does: SET key token NX PX
// ttl, then a compare-and-delete script by EVALSHA. It does not wait.
type setnxLocker struct {
	rdb *goredis.Client
	ttl string
}

// setnxRelease deletes the key only while it holds the token. Its digest
// comes from the server (SCRIPT LOAD on first use), not from SHA-1 in Go,
// which panics at package init under GODEBUG=fips140=only.
var setnxRelease = goredis.NewScriptServerSHA(`if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end`)

// errHeld: the floor found the key held (it never waits).
var errHeld = errors.New("floor: key held")

type setnxHeld struct {
	l          *setnxLocker
	key, token string
}

func (l *setnxLocker) Acquire(ctx context.Context, name string) (Held, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	key := "floor:{" + name + "}"
	err := l.rdb.Do(ctx, "set", key, token, "nx", "px", l.ttl).Err()
	if err == goredis.Nil {
		return nil, errHeld
	}
	if err != nil {
		return nil, err
	}
	return &setnxHeld{l: l, key: key, token: token}, nil
}

func (h *setnxHeld) Release(ctx context.Context) error {
	n, err := setnxRelease.Run(ctx, h.l.rdb, []string{h.key}, h.token).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errors.New("floor: " + h.key + " was not released")
	}
	return nil
}

func (l *setnxLocker) Close() error { return l.rdb.Close() }

// FloorSetNX is raw SET NX PX + EVALSHA compare-and-delete on a tuned
// go-redis client, a fresh 128-bit token per acquisition.
func FloorSetNX() Variant {
	return Variant{
		Name: "floor: SET NX PX + EVALSHA", Lib: "floor", Kind: Floor,
		Settings: "SET NX PX, compare-and-delete script; go-redis pool 128",
		New: func(t Target) (Locker, error) {
			ttl := t.TTL
			if ttl <= 0 {
				ttl = defaultTTL
			}
			return &setnxLocker{
				rdb: newGoRedis(t.Addrs[0], tuned, t.Counter),
				ttl: strconv.FormatInt(ttl.Milliseconds(), 10),
			}, nil
		},
	}
}
