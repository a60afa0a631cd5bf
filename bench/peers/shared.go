package peers

import (
	"context"
	"fmt"

	"github.com/distlock/distlock"
)

// Reader is implemented by Lockers of reader-writer locks: RLock takes the
// name's lock shared, Acquire takes it exclusively.
type Reader interface {
	RLock(ctx context.Context, name string) (Held, error)
}

// sharedLocker is a distlock Client on engine/redis whose Acquire takes a
// permit of a semaphore (limit > 0) or, for a reader-writer lock, the write
// lock (RLock the read lock).
type sharedLocker struct {
	*distlockLocker
	limit int  // semaphore limit; 0: an RWMutex
	read  bool // Acquire takes the read lock (an uncontended row)
}

func (l *sharedLocker) Acquire(ctx context.Context, name string) (Held, error) {
	var lease *distlock.Lease
	var err error
	switch {
	case l.limit > 0:
		lease, err = l.client.Semaphore(name, l.limit).Acquire(ctx, l.opts...)
	case l.read:
		lease, err = l.client.RWMutex(name).RLock(ctx, l.opts...)
	default:
		lease, err = l.client.RWMutex(name).Lock(ctx, l.opts...)
	}
	if err != nil {
		return nil, err
	}
	return lease, nil
}

// RLock implements Reader.
func (l *sharedLocker) RLock(ctx context.Context, name string) (Held, error) {
	lease, err := l.client.RWMutex(name).RLock(ctx, l.opts...)
	if err != nil {
		return nil, err
	}
	return lease, nil
}

func newShared(t Target, limit int, read bool) (Locker, error) {
	lk, err := newDistlockSingle(t, tuned, nil)
	if err != nil {
		return nil, err
	}
	return &sharedLocker{distlockLocker: lk.(*distlockLocker), limit: limit, read: read}, nil
}

// DistlockSemaphore is a permit of distlock's Semaphore of the given limit
// on engine/redis (Client.Semaphore(name, limit).Acquire), default options.
func DistlockSemaphore(limit int) Variant {
	return Variant{
		Name: fmt.Sprintf("distlock Semaphore (limit %d)", limit), Lib: "distlock", Kind: Subject,
		Settings: "engine/redis, Client.Semaphore(name, " + fmt.Sprint(limit) + ").Acquire, defaults; go-redis pool 128",
		New:      func(t Target) (Locker, error) { return newShared(t, limit, false) },
	}
}

// DistlockRWMutex is distlock's RWMutex on engine/redis: Acquire is Lock
// (the write lock), RLock the read lock; read makes Acquire take the read
// lock instead (a row of uncontended read locks).
func DistlockRWMutex(read bool) Variant {
	name, what := "distlock RWMutex", "Client.RWMutex(name): Lock, RLock"
	if read {
		name, what = "distlock RWMutex (RLock)", "Client.RWMutex(name).RLock"
	}
	return Variant{
		Name: name, Lib: "distlock", Kind: Subject,
		Settings: "engine/redis, " + what + ", defaults; go-redis pool 128",
		New:      func(t Target) (Locker, error) { return newShared(t, 0, read) },
	}
}
