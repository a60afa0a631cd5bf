package postgres

import (
	"context"
	"time"

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
	infos, next := mergePage(infos, shared, lastMutex, lastShared, limit)
	return infos, next, nil
}

// Leaks implements engine.LeakFinder: held locks of every kind whose
// lease has no expiry, or one more than maxTTL away (distlock never
// writes such a row; a hand-made INSERT or UPDATE can): a mutex's row, or
// a shared lock's holder (a semaphore's permits, a reader's or a writer's
// lease), one Leak per name with the latest end. Key and Name are the
// lock name, Type "row"; a TTL of -1 means no expiry.
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, cursor string, limit int) ([]engine.Leak, string, error) {
	if err := e.check(); err != nil {
		return nil, "", err
	}
	if err := checkTexts("prefix", prefix, "cursor", cursor); err != nil {
		return nil, "", err
	}
	limit = int(pageLimit(limit))
	rows, err := e.pool.Query(ctx, e.sql.leaks, prefix, cursor, micros(maxTTL), int32(limit))
	if err != nil {
		return nil, "", e.wrap(err)
	}
	defer rows.Close()
	var (
		leaks []engine.Leak
		last  string
		n     int
	)
	for rows.Next() {
		var (
			name  string
			ttlUS int64
		)
		if err := rows.Scan(&name, &ttlUS); err != nil {
			return nil, "", e.wrap(err)
		}
		ttl := time.Duration(ttlUS) * time.Microsecond
		if ttlUS < 0 {
			ttl = -1
		}
		leaks = append(leaks, engine.Leak{Key: name, Name: name, Kind: engine.LeakLock, Type: "row", TTL: ttl})
		last, n = name, n+1
	}
	if err := rows.Err(); err != nil {
		return nil, "", e.wrap(err)
	}
	next := ""
	if n == limit {
		next = last
	}
	return leaks, next, nil
}
