package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	"github.com/distlock/distlock/fence"
)

// The demo's cast: workers that each write a few entries to a fenced
// ledger under one lock, and one that is paused past its lease.
const (
	demoLock         = "ledger"
	demoWorkers      = 3
	demoWrites       = 2                      // per worker
	demoWork         = 15 * time.Millisecond  // time spent under the lock per write
	demoTTL          = 2 * time.Second        // the workers' leases (renewed)
	demoPausedTTL    = 150 * time.Millisecond // the paused worker's lease (not renewed)
	demoTimeout      = 10 * time.Second       // the whole demo, at most
	demoPausedWorker = "worker-0"
)

// cmdDemo implements distlock demo.
func (a *app) cmdDemo(args []string) int {
	const cmd = "demo"
	fs := flagSet(cmd)
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	if err := runDemo(ctx, a.stdout); err != nil {
		return a.fail(cmd, &cliError{code: exitFailed, msg: "FAILED: " + err.Error()})
	}
	return exitOK
}

// ledgerEntry is one write to the fenced resource.
type ledgerEntry struct {
	worker string
	seq    int // the worker's own write number
	fence  uint64
}

// ledger is the demo's protected resource: an append-only list that only
// takes writes through a fence.Guard.
type ledger struct {
	guard   fence.Guard
	mu      sync.Mutex
	entries []ledgerEntry
}

// write appends e if its fencing token is not stale, and returns its
// position in the ledger.
func (l *ledger) write(e ledgerEntry, holder string) (int, error) {
	n := 0
	err := l.guard.Do(demoLock, e.fence, holder, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.entries = append(l.entries, e)
		n = len(l.entries)
		return nil
	})
	return n, err
}

func (l *ledger) snapshot() []ledgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ledgerEntry(nil), l.entries...)
}

// demoLog serializes the workers' lines.
type demoLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *demoLog) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.w, format, args...)
}

// runDemo plays the demo on an embedded engine, writing its story to w, and
// checks the tally. It returns an error when the check fails.
func runDemo(ctx context.Context, w io.Writer) error {
	eng := memory.New()
	defer eng.Close()
	log := &demoLog{w: w}
	res := &ledger{}
	log.printf("distlock demo: %d workers append to a ledger under the lock %q, on the embedded engine\n"+
		"(no Redis needed). The ledger accepts a write only with a fencing token at least as new as\n"+
		"the newest it has seen. %s is paused past the end of its lease, then writes anyway.\n\n",
		demoWorkers+1, demoLock, demoPausedWorker)

	// The paused worker takes the lock first, with a short lease that does
	// not renew itself.
	paused := distlock.New(eng)
	defer paused.Close()
	lease, err := paused.Acquire(ctx, demoLock, distlock.WithTTL(demoPausedTTL), distlock.WithAutoRenew(false))
	if err != nil {
		return err
	}
	first := ledgerEntry{worker: demoPausedWorker, seq: 1, fence: lease.Token()}
	if _, err := res.write(first, lease.Owner()); err != nil {
		return fmt.Errorf("%s's first write: %w", demoPausedWorker, err)
	}
	accepted := []ledgerEntry{first}
	log.printf("  %-9s fence %d  wrote entry 1\n", demoPausedWorker, first.fence)
	log.printf("  %-9s pauses (a GC pause, a VM migration...); its %v lease runs out\n", demoPausedWorker, demoPausedTTL)

	// The others queue for the lock meanwhile.
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := 1; i <= demoWorkers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := demoWorker(ctx, eng, name, res, log)
			mu.Lock()
			defer mu.Unlock()
			accepted = append(accepted, got...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}()
	}

	// The paused worker wakes up after its lease ended and someone else
	// wrote with a newer token, and writes with its old token anyway.
	<-lease.Done()
	for res.guard.Highest(demoLock) <= lease.Token() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("nobody took the lock after %s's lease ended: %w", demoPausedWorker, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	log.printf("  %-9s wakes up; meanwhile its lease ended: %v\n", demoPausedWorker, strings.TrimPrefix(lease.Err().Error(), "distlock: "))
	log.printf("  %-9s writes anyway with its old fence %d\n", demoPausedWorker, lease.Token())
	stale := ledgerEntry{worker: demoPausedWorker, seq: 2, fence: lease.Token()}
	_, staleErr := res.write(stale, lease.Owner())
	var se *fence.StaleError
	if !errors.As(staleErr, &se) || !errors.Is(staleErr, fence.ErrStale) {
		return fmt.Errorf("the paused worker's stale write was not rejected (got %v)", staleErr)
	}
	log.printf("  %-9s REJECTED with fence.ErrStale: %d < %d, the newest fence the ledger saw\n",
		demoPausedWorker, se.Token, se.Highest)
	_ = lease.Release(ctx) // lost already: says so, changes nothing

	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return demoTally(w, res.snapshot(), accepted, stale)
}

// demoWorker acquires the lock demoWrites times and writes one entry each
// time; it returns the writes the ledger accepted.
func demoWorker(ctx context.Context, eng *memory.Engine, name string, res *ledger, log *demoLog) ([]ledgerEntry, error) {
	c := distlock.New(eng)
	defer c.Close()
	var accepted []ledgerEntry
	for seq := 1; seq <= demoWrites; seq++ {
		lease, err := c.Acquire(ctx, demoLock, distlock.WithTTL(demoTTL))
		if err != nil {
			return accepted, err
		}
		e := ledgerEntry{worker: name, seq: seq, fence: lease.Token()}
		time.Sleep(demoWork) // the work that leads to the write
		n, werr := res.write(e, lease.Owner())
		if werr == nil {
			accepted = append(accepted, e)
			log.printf("  %-9s fence %d  wrote entry %d\n", name, e.fence, n)
		}
		if err := errors.Join(werr, lease.Release(ctx)); err != nil {
			return accepted, err
		}
	}
	return accepted, nil
}

// demoTally checks the ledger against the writes the workers saw accepted
// and prints the tally.
func demoTally(w io.Writer, entries, accepted []ledgerEntry, stale ledgerEntry) error {
	inLedger := map[ledgerEntry]int{}
	for i, e := range entries {
		inLedger[e]++
		if i > 0 && e.fence <= entries[i-1].fence {
			return fmt.Errorf("ledger entry %d has fence %d, not above entry %d's %d", i+1, e.fence, i, entries[i-1].fence)
		}
	}
	perWorker := map[string]int{}
	for _, e := range accepted {
		if n := inLedger[e]; n != 1 {
			return fmt.Errorf("accepted write %+v is in the ledger %d times", e, n)
		}
		perWorker[e.worker]++
	}
	switch {
	case len(entries) != len(accepted):
		return fmt.Errorf("the ledger holds %d entries, but %d writes were accepted", len(entries), len(accepted))
	case inLedger[stale] != 0:
		return fmt.Errorf("the stale write is in the ledger")
	}
	fmt.Fprintf(w, "\ntally: %d writes accepted (", len(accepted))
	for i := 0; i <= demoWorkers; i++ {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		name := fmt.Sprintf("worker-%d", i)
		fmt.Fprintf(w, "%s: %d", name, perWorker[name])
	}
	fmt.Fprintf(w, "), 1 stale write rejected\n")
	fmt.Fprintf(w, "check: every accepted write is in the ledger exactly once, fences strictly increase: OK\n")
	return nil
}
