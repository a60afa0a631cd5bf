package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// lockKind is what distlock run takes: the exclusive lock (the default), a
// semaphore's permits (--limit, --weight) or a side of a reader-writer lock
// (--shared, --exclusive).
type lockKind struct {
	limit, weight     int
	shared, exclusive bool
}

// kindFlags defines the lock-kind flags of distlock run.
func kindFlags(fs *flag.FlagSet) *lockKind {
	k := &lockKind{}
	fs.IntVar(&k.limit, "n", 0, "")
	fs.IntVar(&k.limit, "limit", 0, "")
	fs.IntVar(&k.weight, "weight", 0, "")
	fs.BoolVar(&k.shared, "shared", false, "")
	fs.BoolVar(&k.exclusive, "exclusive", false, "")
	return k
}

// check reports a usage error in the lock-kind flags (fs has been parsed).
func (k *lockKind) check(fs *flag.FlagSet) error {
	limitGiven := flagGiven(fs, "n", "limit")
	switch {
	case k.shared && k.exclusive:
		return usageErr("--shared and --exclusive exclude each other: take the read side (--shared) or the write side (--exclusive) of the reader-writer lock")
	case limitGiven && (k.shared || k.exclusive):
		return usageErr("--limit makes NAME a semaphore; --shared and --exclusive are for a reader-writer lock: use one kind")
	case limitGiven && rules.Limit(k.limit) != nil:
		return usageErr("--limit %d: a semaphore's limit is between 1 and %d", k.limit, engine.RWPermits-1)
	case flagGiven(fs, "weight") && !limitGiven:
		return usageErr("--weight takes permits of a semaphore: give its --limit too")
	case flagGiven(fs, "weight") && rules.Weight(k.weight) != nil:
		// (the backend checks it against the semaphore's stored limit)
		return usageErr("--weight %d: a command takes at least 1 permit, at most the semaphore's limit", k.weight)
	}
	if limitGiven && k.weight == 0 {
		k.weight = 1
	}
	return nil
}

// semaphore reports whether a semaphore's permits are asked for.
func (k *lockKind) semaphore() bool { return k.limit > 0 }

// describe names what is taken, for messages: "a permit of", "3 permits
// of", "the read side of", "the write side of", "".
func (k *lockKind) describe() string {
	switch {
	case k.semaphore() && k.weight == 1:
		return fmt.Sprintf("a permit (limit %d) of ", k.limit)
	case k.semaphore():
		return fmt.Sprintf("%d permits (limit %d) of ", k.weight, k.limit)
	case k.shared:
		return "the read side of "
	case k.exclusive:
		return "the write side of "
	}
	return ""
}

// take acquires what k asks for on name, waiting up to wait (one attempt
// when wait is 0).
func (k *lockKind) take(ctx context.Context, c *distlock.Client, name string, wait time.Duration, opts ...distlock.Option) (*distlock.Lease, error) {
	if !k.semaphore() && !k.shared && !k.exclusive {
		return acquireLease(ctx, c, name, wait, opts...)
	}
	var try, block func(context.Context, ...distlock.Option) (*distlock.Lease, error)
	switch {
	case k.semaphore():
		s := c.Semaphore(name, k.limit)
		try, block = s.TryAcquire, s.Acquire
		opts = append(opts, distlock.WithWeight(k.weight))
	case k.shared:
		rw := c.RWMutex(name)
		try, block = rw.TryRLock, rw.RLock
	default:
		rw := c.RWMutex(name)
		try, block = rw.TryLock, rw.Lock
	}
	var l *distlock.Lease
	var err error
	if wait <= 0 {
		l, err = try(ctx, opts...)
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		l, err = block(wctx, opts...)
		cancel()
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, &cliError{code: exitUsage, msg: fmt.Sprintf("this backend cannot keep %s: %v.\n"+
			"Redis, etcd, PostgreSQL and a distlock server keep semaphores and reader-writer locks; "+
			"Redlock keeps reader-writer locks, and semaphores of limit 1 only", k.kindName(), err)}
	}
	return l, err
}

// kindName names the lock kind, for messages.
func (k *lockKind) kindName() string {
	if k.semaphore() {
		return "semaphores"
	}
	return "reader-writer locks"
}

// holderJSON is one holder of a shared lock (status, list).
type holderJSON struct {
	Owner    string `json:"owner"`
	Weight   int    `json:"weight"`
	Mode     string `json:"mode,omitempty"` // a reader-writer lock's: read or write
	Holds    int    `json:"holds"`
	TTLMs    int64  `json:"ttl_ms"`
	Fence    uint64 `json:"fence"`
	Metadata string `json:"metadata,omitempty"`
	// Traceparent: as infoJSON's.
	Traceparent string `json:"traceparent,omitempty"`
}

// kindOf names a lock's kind.
func kindOf(i engine.Info) string {
	if i.Kind == 0 {
		return "mutex"
	}
	return i.Kind.String()
}

// modeOf is the side of a reader-writer lock's holder of weight w.
func modeOf(w int) string {
	if w >= engine.RWPermits {
		return "write"
	}
	return "read"
}

// sharedJSON fills in a shared lock's kind, limit and holders.
func sharedJSON(j *infoJSON, i engine.Info) {
	if i.Kind == 0 {
		return
	}
	j.Kind = i.Kind.String()
	if i.Kind == engine.Semaphore {
		j.Limit = i.Limit
	}
	j.Owner, j.Holds, j.Metadata, j.TTLMs = "", 0, "", nil
	j.Fence = i.Token
	for _, h := range i.Holders {
		ttl := h.TTL.Milliseconds()
		if h.TTL < 0 {
			ttl = -1
		}
		hj := holderJSON{Owner: h.Owner, Weight: h.Weight, Holds: h.Count, TTLMs: ttl, Fence: h.Token}
		hj.Metadata, hj.Traceparent = distlock.TraceMetadata(h.Metadata)
		if i.Kind == engine.RWLock {
			hj.Mode = modeOf(h.Weight)
			if j.Mode != "write" {
				j.Mode = hj.Mode
			}
		}
		j.Holders = append(j.Holders, hj)
	}
}

// holderText describes one holder of a shared lock: "×2" (permits) or
// "read"/"write".
func holderText(kind engine.Kind, h engine.Holder) string {
	if kind == engine.RWLock {
		return modeOf(h.Weight)
	}
	return fmt.Sprintf("×%d", h.Weight)
}

// inspectAny inspects name as a mutex, and as a shared lock when no mutex
// of that name is held and the backend keeps shared locks.
func inspectAny(ctx context.Context, c *distlock.Client, name string) (engine.Info, error) {
	info, err := c.Inspect(ctx, name)
	if err != nil || info.Held {
		return info, err
	}
	si, serr := c.RWMutex(name).Inspect(ctx) // any shared lock's holders
	if serr == nil && si.Kind != 0 {
		si.Name = name
		return si, nil
	}
	return info, nil
}

// printSharedStatus prints a shared lock's state for distlock status.
func printSharedStatus(out io.Writer, info engine.Info) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "name:\t%s\n", info.Name)
	switch info.Kind {
	case engine.Semaphore:
		used := 0
		for _, h := range info.Holders {
			used += h.Weight
		}
		fmt.Fprintf(w, "kind:\tsemaphore, limit %d (%s held)\n", info.Limit, permits(used))
	default:
		mode := "free"
		if info.Held {
			mode = "read"
			for _, h := range info.Holders {
				if h.Weight >= engine.RWPermits {
					mode = "write"
				}
			}
		}
		fmt.Fprintf(w, "kind:\treader-writer lock (%s)\n", mode)
	}
	if info.Held {
		fmt.Fprintf(w, "state:\theld by %d\n", len(info.Holders))
	} else {
		fmt.Fprintf(w, "state:\tfree\n")
	}
	fmt.Fprintf(w, "fence high-water:\t%s\n", fmtFence(info.HighWater))
	fmt.Fprintf(w, "waiters:\t%d\n", info.Waiters)
	if info.Partial != nil {
		fmt.Fprintf(w, "partial:\t%s\n", partialNote(info.Partial))
	}
	_ = w.Flush()
	if len(info.Holders) == 0 {
		return
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	what := "WEIGHT"
	if info.Kind == engine.RWLock {
		what = "MODE"
	}
	fmt.Fprintf(w, "HOLDER\t%s\tHOLDS\tTTL\tFENCE\tMETADATA\n", what)
	for _, h := range info.Holders {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", h.Owner, holderText(info.Kind, h), h.Count, fmtTTL(h.TTL), fmtFence(h.Token), cut(shownMetadata(h.Metadata), tableMetadata))
	}
	_ = w.Flush()
}

// leak is a leak found by the engine (engine.LeakFinder), or a shared
// lock's holder (or, on a backend without a LeakFinder, a lock) whose ttl
// is beyond --max-ttl, found in the listing.
type leak struct {
	engine.Leak
	holder *engine.Holder // a shared lock's holder
	shared engine.Kind
}

// listedLeaks finds leaks in the listing: the holders of shared locks
// whose ttl is negative or beyond maxTTL (on every backend: one report
// per holder, with its owner and weight; see withoutListedHolders), and,
// on a backend whose engine finds no leaks itself (a distlock server),
// the locks too. Backends that keep no shared locks and find their own
// leaks are not listed.
func listedLeaks(ctx context.Context, b *backend, prefix string, maxTTL time.Duration) ([]leak, error) {
	_, finds := b.eng.(engine.LeakFinder)
	locks := !finds
	lister, ok := b.eng.(engine.Lister)
	_, shares := b.eng.(engine.Sharer)
	if !ok || !shares && !locks {
		return nil, nil
	}
	infos, err := listAll(ctx, lister, prefix)
	if _, ok := engine.AsPartial(err); err != nil && !ok {
		return nil, err
	}
	leaked := func(d time.Duration) bool { return d < 0 || d > maxTTL }
	var out []leak
	for _, i := range infos {
		if i.Kind == 0 {
			if locks && i.Held && leaked(i.TTL) {
				out = append(out, leak{Leak: engine.Leak{Key: i.Name, Name: i.Name, Kind: engine.LeakLock, Type: "lock", TTL: i.TTL}})
			}
			continue
		}
		for _, h := range i.Holders {
			if leaked(h.TTL) {
				out = append(out, leak{Leak: engine.Leak{Key: i.Name, Name: i.Name, Kind: engine.LeakLock, Type: i.Kind.String(), TTL: h.TTL},
					holder: &h, shared: i.Kind})
			}
		}
	}
	return out, err // nil, or the listing's *engine.PartialError
}

// withoutListedHolders drops from found, an engine's own leaks, those of
// the shared locks whose holders listed (listedLeaks) reports: the
// listing reports each such holder once, with its owner and weight, on
// every backend, while some engines' leak searches report the same
// holders again (PostgreSQL one row per name, ZooKeeper one per holder's
// node) and others none (the embedded engine, Redis, etcd).
func withoutListedHolders(found []engine.Leak, listed []leak) []engine.Leak {
	shared := make(map[string]bool)
	for _, l := range listed {
		if l.holder != nil {
			shared[l.Name] = true
		}
	}
	return slices.DeleteFunc(found, func(l engine.Leak) bool { return l.Kind == engine.LeakLock && shared[l.Name] })
}
