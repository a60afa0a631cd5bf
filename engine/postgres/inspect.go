package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
)

// Inspect implements engine.Engine: the mutex's row and the shared
// lock's, two plain reads (no locks) sent in one round trip (a batch), and
// the view engine.Describe picks. Waiters counts the live entries of the
// queue (waiters outside a queue are not visible to the database), and
// Queue lists them in arrival order; a shared lock's Holders are in token
// order. HighWater is the token of the name's last grant while its row
// exists (held, queued for, or raised above the token sequence), else 0.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	if err := e.check(); err != nil {
		return engine.Info{}, err
	}
	if err := checkText("name", name); err != nil {
		return engine.Info{}, err
	}
	b := &pgx.Batch{}
	b.Queue(e.sql.inspect, name)
	b.Queue(e.sql.inspectShared, name)
	br := e.pool.SendBatch(ctx, b)
	mutex, err := scanInfo(name, br.QueryRow())
	var shared engine.Info
	if err == nil {
		shared, err = scanSharedInfo(name, br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return engine.Info{}, e.wrap(err)
	}
	return engine.Describe(mutex, shared), nil
}

// scanInfo reads a mutex's row (the inspect statement).
func scanInfo(name string, row pgx.Row) (engine.Info, error) {
	info := engine.Info{Name: name}
	var (
		holds, waiters   int32
		token, hw, ttlUS int64
		ids              []string
		us               []int64
	)
	err := row.Scan(&info.Held, &info.Owner, &holds, &info.Metadata, &token, &ttlUS, &hw, &waiters, &ids, &us)
	if err != nil {
		return engine.Info{}, err
	}
	info.Count, info.Token, info.HighWater, info.Waiters = int(holds), uint64(token), uint64(hw), int(waiters)
	info.Queue = queueList(ids, us)
	info.TTL = time.Duration(ttlUS) * time.Microsecond
	return info, nil
}

// RaiseFence implements engine.FenceRaiser (a quorum's phase 2),
// dispatched once on r.Kind (engine.RaiseByKind): while r.Owner holds the
// lock (a mutex's grant, or a shared lock's permits), its high-water goes
// up to at least r.Token and the hold's token becomes r.Token, within
// engine.CheckRaise (a refusal is an *engine.ArgumentError and changes
// nothing): one call of raise_fence or raise_shared_fence.
func (e *Engine) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return engine.RaiseByKind(ctx, r, e.raiseMutex, e.raiseShared)
}

// raiseMutex is RaiseFence's mutex path.
func (e *Engine) raiseMutex(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return e.raise(ctx, e.sql.raiseFence, r)
}

// raiseShared is RaiseFence's path for a shared lock's holder.
func (e *Engine) raiseShared(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return e.raise(ctx, e.sql.raiseSharedFence, r)
}

// raise runs query, a raise function, for r.
func (e *Engine) raise(ctx context.Context, query string, r engine.RaiseRequest) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner); err != nil {
		return false, err
	}
	if r.Token > engine.MaxToken {
		return false, engine.RaiseAboveMaxError(r.Token)
	}
	var held bool
	if err := e.pool.QueryRow(ctx, query, r.Name, r.Owner, int64(r.Token)).Scan(&held); err != nil {
		return false, e.raiseError(err, r.Token)
	}
	return held, nil
}

// SetMetadata implements engine.MetadataSetter (an election's Proclaim). A
// request that names a token (MetadataRequest.Token) other than the owner's
// hold's is answered HeldByOther and changes nothing (schema version 16; on
// an older schema, not checked: Engine.v15).
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner, "metadata", r.Metadata); err != nil {
		return 0, err
	}
	var status int32
	err := e.v15.call(func() error {
		return e.pool.QueryRow(ctx, e.sql.setMetadata, r.Name, r.Owner, r.Metadata, grantToken(r.Token)).Scan(&status)
	}, func() error {
		return e.pool.QueryRow(ctx, e.sql.setMetadataV15, r.Name, r.Owner, r.Metadata).Scan(&status)
	})
	if err != nil {
		return 0, e.wrap(err)
	}
	return engine.ExtendStatus(status), nil
}

// Sweep deletes up to limit rows of locks that hold nothing any more
// (expired, nobody queued): a name whose lease expired keeps its row until
// it is touched again or swept. It returns how many rows it deleted.
// Sweeping never changes what any call answers.
func (e *Engine) Sweep(ctx context.Context, limit int) (int, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	var n int32
	if err := e.pool.QueryRow(ctx, e.sql.sweep, pageLimit(limit)).Scan(&n); err != nil {
		return 0, e.wrap(err)
	}
	return int(n), nil
}
