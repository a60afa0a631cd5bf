package waiting

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// Beat renews one waiter's entry in an engine's queue every ttl/3 from its
// own goroutine, for a waiter that has no watchdog to carry its heartbeats
// (the server's held-open requests; a Client's waiters ride on its lease
// renewals instead). Its Kick channel is signalled when the entry heads the
// queue of a free lock, or was dropped: the waiter should try again. The
// goroutine starts with the first call to Start and ends with Stop.
type Beat struct {
	// Kind is the kind of the lock whose queue the entry is in
	// (engine.ExtendRequest.Kind); set it before Start.
	Kind engine.Kind

	eng     engine.Engine
	name    string
	id      string
	ttl     time.Duration
	kick    chan struct{}
	done    chan struct{}
	once    sync.Once
	started bool
	wg      sync.WaitGroup
}

// NewBeat returns the heartbeat of waiter id in name's queue, with ttl.
func NewBeat(eng engine.Engine, name, id string, ttl time.Duration) *Beat {
	return &Beat{eng: eng, name: name, id: id, ttl: ttl, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// Kick delivers the heartbeat's wake-ups (see Loop.Kick).
func (b *Beat) Kick() <-chan struct{} { return b.kick }

// Start starts the heartbeats, once; later calls do nothing. It suits
// Loop.Queued. It must not be called after Stop.
func (b *Beat) Start(time.Time) {
	if b.started {
		return
	}
	b.started = true
	b.wg.Add(1)
	go b.loop()
}

func (b *Beat) loop() {
	defer b.wg.Done()
	t := time.NewTicker(b.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.ttl/3)
		res, err := b.eng.Extend(ctx, []engine.ExtendRequest{{Name: b.name, Owner: b.id, TTL: b.ttl, Waiter: true, Kind: b.Kind}})
		cancel()
		if err == nil && len(res) == 1 && res[0].Err == nil && (res[0].Wake || res[0].Status != engine.Extended) {
			select {
			case b.kick <- struct{}{}:
			default:
			}
		}
	}
}

// Stop ends the heartbeats and waits for the goroutine. It is idempotent.
func (b *Beat) Stop() {
	b.once.Do(func() { close(b.done) })
	b.wg.Wait()
}
