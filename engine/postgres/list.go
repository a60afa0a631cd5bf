package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
)

// List implements engine.Lister: the held locks whose names start with
// prefix, mutexes and shared locks (held or waited for) alike, in byte
// order of their names, at most limit (at least 1) per page: a statement
// for the mutexes, one for the shared locks' names, and one shared inspect
// per shared lock. The cursor is the last name of the previous page.
func (e *Engine) List(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	if err := e.check(); err != nil {
		return nil, "", err
	}
	if err := checkTexts("prefix", prefix, "cursor", cursor); err != nil {
		return nil, "", err
	}
	limit = int(pageLimit(limit))
	rows, err := e.pool.Query(ctx, e.sql.list, prefix, cursor, int32(limit))
	if err != nil {
		return nil, "", e.wrap(err)
	}
	defer rows.Close()
	var infos []engine.Info
	for rows.Next() {
		var (
			info             engine.Info
			holds, waiters   int32
			token, ttlUS, hw int64
			ids              []string
			us               []int64
		)
		if err := rows.Scan(&info.Name, &info.Owner, &holds, &info.Metadata, &token, &ttlUS, &hw, &waiters, &ids, &us); err != nil {
			return nil, "", e.wrap(err)
		}
		info.Queue = queueList(ids, us)
		info.Held, info.Count, info.Token, info.HighWater, info.Waiters = true, int(holds), uint64(token), uint64(hw), int(waiters)
		info.TTL = time.Duration(ttlUS) * time.Microsecond
		infos = append(infos, info)
	}
	if err := rows.Err(); err != nil {
		return nil, "", e.wrap(err)
	}
	rows.Close()
	lastMutex := ""
	if len(infos) >= limit {
		lastMutex = infos[len(infos)-1].Name
	}
	shared, lastShared, err := e.listShared(ctx, prefix, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	infos, next := mergePage(infos, shared, infoName, lastMutex, lastShared, limit)
	return infos, next, nil
}

// Leaks implements engine.LeakFinder: held locks of every kind whose
// lease has no expiry, or one more than maxTTL away (distlock never
// writes such a row; a hand-made INSERT or UPDATE can): a mutex's row, or
// a shared lock's holder (a semaphore's permits, a reader's or a writer's
// lease), one Leak per name with the latest end. Key and Name are the
// lock name, Type "row"; a TTL of -1 means no expiry. A countdown latch
// still counting (its row has no expiry by design) is a Leak of kind
// engine.LeakOther and type LatchLeakType, TTL -1, in the name's place
// (a name with a lock leak and a latch gives both on one page).
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	if err := e.check(); err != nil {
		return nil, "", err
	}
	if err := checkTexts("prefix", prefix, "cursor", cursor); err != nil {
		return nil, "", err
	}
	limit = int(pageLimit(limit))
	locks, lastLock, err := e.leakRows(ctx, e.sql.leaks, limit, func(rows pgx.Rows) (engine.Leak, error) {
		var (
			name  string
			ttlUS int64
		)
		err := rows.Scan(&name, &ttlUS)
		ttl := time.Duration(ttlUS) * time.Microsecond
		if ttlUS < 0 {
			ttl = -1
		}
		return engine.Leak{Key: name, Name: name, Kind: engine.LeakLock, Type: "row", TTL: ttl}, err
	}, prefix, cursor, micros(maxTTL), int32(limit))
	if err != nil {
		return nil, "", err
	}
	latches, lastLatch, err := e.leakRows(ctx, e.sql.latchLeaks, limit, func(rows pgx.Rows) (engine.Leak, error) {
		var name string
		err := rows.Scan(&name)
		return engine.Leak{Key: name, Name: name, Kind: engine.LeakOther, Type: LatchLeakType, TTL: -1}, err
	}, prefix, cursor, int32(limit))
	var se *SchemaError
	if errors.As(err, &se) {
		latches, lastLatch, err = nil, "", nil // a schema before version 6 keeps no latches
	}
	if err != nil {
		return nil, "", err
	}
	leaks, next := mergePage(locks, latches, func(l engine.Leak) string { return l.Name }, lastLock, lastLatch, limit)
	return leaks, next, nil
}

// LatchLeakType is the Leak.Type of a countdown latch still counting: its
// row has no expiry by design (it goes when its count reaches zero), and
// deleting it opens the latch.
const LatchLeakType = "latch row"

// leakRows runs the leak statement stmt with args and reads its rows with
// scan; last is the last row's name when it read limit rows (its page was
// full), else "".
func (e *Engine) leakRows(ctx context.Context, stmt string, limit int, scan func(pgx.Rows) (engine.Leak, error), args ...any) (leaks []engine.Leak, last string, err error) {
	rows, err := e.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, "", e.wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scan(rows)
		if err != nil {
			return nil, "", e.wrap(err)
		}
		leaks = append(leaks, l)
	}
	if err := rows.Err(); err != nil {
		return nil, "", e.wrap(err)
	}
	if len(leaks) >= limit {
		last = leaks[len(leaks)-1].Name
	}
	return leaks, last, nil
}
