package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// outcome classifies an operation's answer: what the specification and
// the differential comparison look at.
type outcome uint8

const (
	outOK          outcome = iota
	outLocked              // ErrLocked: contention (or a wait that ended)
	outKind                // an *ArgumentError naming another kind (engine.KindError)
	outArg                 // another argument error
	outUnsupported         // errors.ErrUnsupported
	outNotHeld             // ErrNotHeld or ErrLeaseLost: the lease is gone
	outSkipped             // no lease to act on
	outOther               // anything else (a backend error, a timeout)
)

func (o outcome) String() string {
	return [...]string{"ok", "locked", "kind-refused", "argument-error", "unsupported", "not-held", "skipped", "other"}[o]
}

// event is one operation of a history with its invocation and response
// times (monotonic, since the run's start) and its answer.
type event struct {
	Client, Index int
	Op            op
	Name          string
	NameIdx       int
	Inv, Resp     time.Duration
	Owner         string // the owner asked for, or the lease's owner acted on
	Class         lockClass
	Weight        int
	Token         uint64
	Target        uint64        // the token of the lease acted on (release, extend, ...)
	TargetEnd     time.Duration // that lease's own deadline when the operation began
	// GrantEnd: a granted lease's deadline as the Client computed it at
	// the grant (zero when none): its validity counts from its request
	// less the engine's Grant.Age (an engine.AcquireRequest.Aged grant on
	// a lease renewed a moment before, such as etcd's pooled leases).
	GrantEnd time.Duration
	// PastDeadline: the Client answered that the lease acted on was lost,
	// having found its own deadline passed during the call (a loss by the
	// Client's clock, whatever the engine keeps).
	PastDeadline bool
	Out          outcome
	Err          error
	Bool         bool          // ForceRelease's answer
	Infos        []engine.Info // what Inspect or List saw
	// Members are a set's events, one per name (a set's own event is
	// recorded as these): each member's grant, or for a set not granted
	// the refusal of the name that blocked it and, for the others, a hold
	// of unknown outcome (taken and given back in sorted order, or never).
	Members []*event
}

// anyOwner is the owner of a set member's hold of unknown outcome: the
// member's random owner is not known when the set failed; a view that
// shows any owner holding the name then may show that hold.
const anyOwner = "*"

// recorded returns the events e stands for in a history: e, or a set's
// members.
func (e *event) recorded() []*event {
	if len(e.Members) > 0 {
		return e.Members
	}
	return []*event{e}
}

func (e *event) String() string {
	s := fmt.Sprintf("[%8.1fms %8.1fms] c%d#%d %v", ms(e.Inv), ms(e.Resp), e.Client, e.Index, e.Op)
	if e.Name != "" {
		s += " on " + e.Name
	}
	if e.Owner != "" {
		s += " owner=" + e.Owner
	}
	s += " -> " + e.Out.String()
	if e.Out == outOK && e.Op.Kind.acquires() {
		s += fmt.Sprintf(" token=%d", e.Token)
	}
	if e.Op.Kind == opForce {
		s += fmt.Sprintf(" held=%v", e.Bool)
	}
	for _, in := range e.Infos {
		s += " " + infoString(in)
	}
	if e.Err != nil && e.Out != outOK {
		s += fmt.Sprintf(" (%v)", e.Err)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func infoString(in engine.Info) string {
	var hs []string
	for _, h := range in.Holders {
		hs = append(hs, fmt.Sprintf("%s:w%d:t%d", h.Owner, h.Weight, h.Token))
	}
	return fmt.Sprintf("{%s held=%v kind=%v limit=%d waiters=%d holders=[%s]}", in.Name, in.Held, in.Kind, in.Limit, in.Waiters, strings.Join(hs, " "))
}

// history is what one run of a schedule recorded.
type history struct {
	Prefix string
	Names  []string
	Events []*event
	// Local lists what the clients saw of their own leases that breaks
	// the contract (a lease that reads valid past its deadline).
	Local []string
	// Alias names the random owners of set members, by lock name and
	// owner, after the operation that got them (client, index), so that
	// two runs of one schedule can be compared (a set's members share an
	// owner on some engines, not on others).
	aliasMu sync.Mutex
	Alias   map[[2]string]string
}

// alias records stable as the name of owner's hold of lock name.
func (h *history) alias(name, owner, stable string) {
	h.aliasMu.Lock()
	defer h.aliasMu.Unlock()
	if h.Alias == nil {
		h.Alias = map[[2]string]string{}
	}
	h.Alias[[2]string{name, owner}] = stable
}

// stable returns the stable name of owner's hold of lock name.
func (h *history) stable(name, owner string) string {
	h.aliasMu.Lock()
	defer h.aliasMu.Unlock()
	if a, ok := h.Alias[[2]string{name, owner}]; ok {
		return a
	}
	return owner
}

// held is a lease a client holds in a run.
type held struct {
	lease   *distlock.Lease
	lead    *distlock.Leadership
	nameIdx int
	class   lockClass
	owner   string
}

// runSchedule runs s with one Client per engine (newEngine(i) for client
// i), on names under prefix, with the faults f (nil: none), and returns the
// history. The Clients are closed (their leases released) after the
// history is complete.
func runSchedule(ctx context.Context, s schedule, prefix string, f *Faults, newEngine func(i int) (engine.Engine, func())) *history {
	h := &history{Prefix: prefix}
	for i := range s.Names {
		h.Names = append(h.Names, fmt.Sprintf("%s-n%d", prefix, i))
	}
	start := time.Now()
	clients := make([]*runClient, len(s.Clients))
	for i := range s.Clients {
		e, drop := newEngine(i)
		clients[i] = &runClient{id: i, eng: e, c: distlock.New(e), h: h, start: start, drop: drop}
	}
	defer func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { _ = c.c.Close() })
		}
		wg.Wait()
	}()
	if s.Sequential {
		for step := 0; ; step++ {
			more := false
			for i, ops := range s.Clients {
				if step < len(ops) {
					more = true
					h.Events = append(h.Events, clients[i].do(ctx, step, ops[step]).recorded()...)
				}
			}
			if !more {
				return h
			}
		}
	}
	per := make([][]*event, len(s.Clients))
	var wg sync.WaitGroup
	for i, ops := range s.Clients {
		wg.Go(func() {
			var stalls []func()
			defer func() {
				for _, wait := range stalls {
					wait()
				}
			}()
			for j, o := range ops {
				if o.Kind == opKill {
					return // its leases stay until their ttls end
				}
				if o.Kind == opDrop {
					if d := clients[i].drop; d != nil {
						d() // the next reply on the client's connection is lost
					}
					continue
				}
				if o.Gap > 0 {
					select {
					case <-time.After(o.Gap):
					case <-ctx.Done():
						return
					}
				}
				switch {
				case o.Kind == opStall && f != nil && f.Stall != nil:
					e := &event{Client: i, Index: j, Op: o, NameIdx: -1}
					stalls = append(stalls, clients[i].stall(ctx, f, e, o.Wait))
					per[i] = append(per[i], e)
				case o.Kind == opRestart && f != nil && f.Restart != nil:
					e := &event{Client: i, Index: j, Op: o, NameIdx: -1}
					clients[i].restart(ctx, f, e)
					per[i] = append(per[i], e)
				case o.Kind != opStall && o.Kind != opRestart:
					per[i] = append(per[i], clients[i].do(ctx, j, o).recorded()...)
				}
			}
		})
	}
	wg.Wait()
	for _, evs := range per {
		h.Events = append(h.Events, evs...)
	}
	for _, c := range clients {
		h.Local = append(h.Local, c.local...)
	}
	return h
}

// runClient is one client of a run: its own engine and Client, and the
// leases it holds.
type runClient struct {
	id    int
	eng   engine.Engine
	c     *distlock.Client
	h     *history
	start time.Time
	held  []*held
	local []string
	drop  func() // Harness.Faulty's: lose the next reply (nil: none)
}

// pick returns the held lease slot selects, preferring one of class (any
// class when none).
func (rc *runClient) pick(slot int, classes ...lockClass) *held {
	var hs []*held
	for _, x := range rc.held {
		if len(classes) == 0 || x.class == classes[0] || len(classes) > 1 && x.class == classes[1] {
			hs = append(hs, x)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return hs[slot%len(hs)]
}

func (rc *runClient) forget(x *held) {
	for i, y := range rc.held {
		if y == x {
			rc.held = append(rc.held[:i], rc.held[i+1:]...)
			return
		}
	}
}

// do runs one operation and records it.
func (rc *runClient) do(ctx context.Context, idx int, o op) *event {
	e := &event{Client: rc.id, Index: idx, Op: o, NameIdx: o.Name, Class: o.Kind.class()}
	var target *held
	switch o.Kind {
	case opReenter, opAttach:
		target = rc.pick(o.Slot, classMutex)
	case opProclaim:
		target = rc.pick(o.Slot, classMutex)
		if target != nil && target.lead == nil {
			target = nil
			for _, x := range rc.held {
				if x.lead != nil {
					target = x
				}
			}
		}
	case opRelease, opExtend, opForceHolder:
		target = rc.pick(o.Slot)
	}
	if o.Name < 0 {
		if target == nil {
			e.Out = outSkipped
			e.Inv, e.Resp = time.Since(rc.start), time.Since(rc.start)
			return e
		}
		e.NameIdx, e.Owner, e.Class, e.Target = target.nameIdx, target.owner, target.class, target.lease.Token()
		e.TargetEnd = target.lease.Deadline().Sub(rc.start)
	}
	e.Name = rc.h.Names[e.NameIdx]
	if o.Kind.acquires() && o.Kind != opReenter || o.Kind == opBadWeight {
		e.Owner = fmt.Sprintf("c%do%d", rc.id, idx)
	}
	wait := 10 * time.Second
	if o.Kind.waits() {
		wait = o.Wait
	}
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	opts := []distlock.Option{distlock.WithTTL(max(o.TTL, time.Millisecond)), distlock.WithAutoRenew(false), distlock.WithOwner(e.Owner)}
	if o.Fair {
		opts = append(opts, distlock.WithFair())
	}
	e.Inv = time.Since(rc.start)
	var (
		l   *distlock.Lease
		ld  *distlock.Leadership
		err error
	)
	sem := rc.c.Semaphore(e.Name, semLimit)
	rw := rc.c.RWMutex(e.Name)
	switch o.Kind {
	case opTry, opReenter:
		l, err = rc.c.TryAcquire(octx, e.Name, opts...)
	case opAcquire:
		l, err = rc.c.Acquire(octx, e.Name, opts...)
	case opSemTry, opBadWeight:
		e.Weight = o.Weight
		l, err = sem.TryAcquire(octx, append(opts, distlock.WithWeight(o.Weight))...)
	case opSemAcquire:
		e.Weight = o.Weight
		l, err = sem.Acquire(octx, append(opts, distlock.WithWeight(o.Weight))...)
	case opReadTry:
		l, err = rw.TryRLock(octx, opts...)
	case opReadAcquire:
		l, err = rw.RLock(octx, opts...)
	case opWriteTry:
		l, err = rw.TryLock(octx, opts...)
	case opWriteAcquire:
		l, err = rw.Lock(octx, opts...)
	case opCampaign:
		ld, err = rc.c.Campaign(octx, e.Name, "v-"+e.Owner, opts...)
		if err == nil {
			l = ld.Lease()
		}
	case opRelease:
		err = target.lease.Release(octx)
		rc.forget(target)
	case opExtend:
		err = target.lease.Extend(octx, o.TTL)
	case opAttach:
		l, err = rc.c.Attach(octx, e.Name, e.Owner, distlock.WithTTL(o.TTL), distlock.WithAutoRenew(false))
	case opProclaim:
		err = target.lead.Proclaim(octx, "p-"+e.Owner)
	case opSetLimit:
		err = sem.SetLimit(octx, o.Limit)
	case opForce:
		e.Bool, err = rc.c.ForceRelease(octx, e.Name)
	case opForceHolder:
		err = rc.c.ForceReleaseHolder(octx, e.Name, e.Owner)
	case opInspect:
		err = rc.inspect(octx, e)
	case opList:
		err = rc.list(octx, e)
	case opGhost:
		e.Token, e.Bool, err = rc.ghost(octx, e)
	case opSetTry, opSetAcquire:
		// A set takes no owner (each member gets a random one) and no
		// WithFair.
		rc.set(octx, e, []distlock.Option{distlock.WithTTL(max(o.TTL, time.Millisecond)), distlock.WithAutoRenew(false)})
		rc.checkLocal()
		return e
	}
	e.Resp = time.Since(rc.start)
	e.Err = err
	e.Out = classify(err) // a wait that ended on a backend error (no answer) is outOther, not a refusal
	var lost *distlock.LostError
	if target != nil && errors.As(err, &lost) && !lost.At.Before(target.lease.Deadline()) {
		e.PastDeadline = true
	}
	if l != nil {
		e.Token, e.GrantEnd = l.Token(), l.Deadline().Sub(rc.start)
		if o.Kind == opAttach {
			rc.held = append(rc.held, &held{lease: l, nameIdx: e.NameIdx, class: classMutex, owner: e.Owner})
		} else {
			rc.held = append(rc.held, &held{lease: l, lead: ld, nameIdx: e.NameIdx, class: e.Class, owner: e.Owner})
		}
	}
	rc.checkLocal()
	return e
}

// set takes the names o.Name and o.Name2 at once (TryAcquireAll, or
// AcquireAll for opSetAcquire) with opts (no owner: a set's members get
// random ones) and records it as one event per member in e.Members.
func (rc *runClient) set(ctx context.Context, e *event, opts []distlock.Option) {
	names := []string{rc.h.Names[e.Op.Name], rc.h.Names[e.Op.Name2]}
	var (
		s   *distlock.LeaseSet
		err error
	)
	if e.Op.Kind == opSetAcquire {
		s, err = rc.c.AcquireAll(ctx, names, opts...)
	} else {
		s, err = rc.c.TryAcquireAll(ctx, names, opts...)
	}
	e.Resp, e.Err, e.Out = time.Since(rc.start), err, classify(err)
	var le *distlock.LockedError
	var we *distlock.WaitError
	blocked := ""
	switch {
	case errors.As(err, &le):
		blocked = le.Name
	case errors.As(err, &we):
		blocked = we.Name
	}
	for k, idx := range []int{e.Op.Name, e.Op.Name2} {
		m := *e
		m.Members, m.Name, m.NameIdx, m.Class = nil, names[k], idx, classMutex
		switch {
		case s != nil:
			l := s.Lease(names[k])
			rc.h.alias(names[k], l.Owner(), e.Owner+".set")
			m.Owner, m.Token, m.GrantEnd = l.Owner(), l.Token(), l.Deadline().Sub(rc.start)
			rc.held = append(rc.held, &held{lease: l, nameIdx: idx, class: classMutex, owner: m.Owner})
		case names[k] == blocked:
			// The name that refused the set (a wait that ended may
			// have been granted as it ended, and dropped), by an owner
			// not known.
			m.Owner = anyOwner
		case e.Out != outArg && e.Out != outUnsupported:
			// Taken and given back, or never taken: a hold of unknown
			// outcome, for a short while (the Client gives back what
			// it took before it answers), by an owner not known.
			m.Owner, m.Out, m.Op.TTL = anyOwner, outOther, 0
		}
		e.Members = append(e.Members, &m)
	}
}

// ghost asks for the fair name as a fair waiter that then dies: a queue
// entry with o.Wait as its heartbeat ttl, never heartbeated nor taken
// (a grant, when the lock was free, is a holder that dies). It returns the
// grant's token, or whether the request was queued.
func (rc *runClient) ghost(ctx context.Context, e *event) (token uint64, queued bool, err error) {
	g, err := rc.eng.Acquire(ctx, engine.AcquireRequest{Name: e.Name, Owner: e.Owner, TTL: e.Op.TTL, Attempt: e.Owner,
		Waiting: true, Waiter: "w-" + e.Owner, WaiterTTL: e.Op.Wait, Order: engine.OrderFair})
	switch {
	case err != nil:
		return 0, false, err
	case g.Acquired:
		return g.Token, false, nil
	}
	return 0, g.Queued, distlock.ErrLocked
}

// checkLocal reports a lease that reads valid past its deadline, and
// forgets the leases that ended.
func (rc *runClient) checkLocal() {
	now := time.Now()
	kept := rc.held[:0]
	for _, x := range rc.held {
		err := x.lease.Err()
		if err == nil && now.After(x.lease.Deadline()) {
			rc.local = append(rc.local, fmt.Sprintf("client %d: the lease of %s on %s reads valid %v past its deadline",
				rc.id, x.owner, rc.h.Names[x.nameIdx], now.Sub(x.lease.Deadline())))
		}
		if err == nil {
			kept = append(kept, x)
		}
	}
	rc.held = kept
}

// inspect records Inspect of the name, and the shared kinds' Inspect on an
// engine that keeps shared locks.
func (rc *runClient) inspect(ctx context.Context, e *event) error {
	info, err := rc.c.Inspect(ctx, e.Name)
	if err != nil {
		return err
	}
	info.Name = e.Name
	e.Infos = append(e.Infos, info)
	if _, ok := rc.eng.(engine.Sharer); !ok {
		return nil
	}
	info, err = rc.c.Semaphore(e.Name, semLimit).Inspect(ctx)
	if err != nil {
		return err
	}
	info.Name = e.Name
	e.Infos = append(e.Infos, info)
	return nil
}

// list records the engine's listing of the run's names.
func (rc *runClient) list(ctx context.Context, e *event) error {
	ls, ok := rc.eng.(engine.Lister)
	if !ok {
		return errors.ErrUnsupported
	}
	e.Name = rc.h.Prefix
	cursor := ""
	for {
		infos, next, err := ls.List(ctx, rc.h.Prefix+"-", cursor, 50)
		if err != nil {
			return err
		}
		for _, in := range infos {
			if in.Held && len(in.Holders) == 0 { // a mutex: as Client.Inspect fills it in
				in.Holders = []engine.Holder{{Owner: in.Owner, Count: in.Count, Token: in.Token, TTL: in.TTL, Metadata: in.Metadata}}
			}
			e.Infos = append(e.Infos, in)
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// classify sorts an answer into an outcome.
func classify(err error) outcome {
	var ae *distlock.ArgumentError
	var eae *engine.ArgumentError
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, errors.ErrUnsupported):
		return outUnsupported
	case errors.As(err, &ae) && strings.Contains(ae.Reason, ", not a "),
		errors.As(err, &eae) && strings.Contains(eae.Reason, ", not a "): // a ghost's refusal comes from the engine
		return outKind
	case errors.Is(err, distlock.ErrInvalidArgument):
		return outArg
	case errors.Is(err, distlock.ErrLocked):
		return outLocked
	case errors.Is(err, distlock.ErrNotHeld), errors.Is(err, distlock.ErrLeaseLost):
		return outNotHeld
	}
	return outOther
}
