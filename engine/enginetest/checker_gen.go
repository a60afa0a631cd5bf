package enginetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// opKind is one operation of the randomized checker's schedules.
type opKind uint8

const (
	opTry          opKind = iota // mutex TryAcquire
	opAcquire                    // mutex Acquire, waiting op.Wait at most
	opReenter                    // mutex TryAcquire as the owner of a held mutex lease
	opRelease                    // Lease.Release of a held lease
	opExtend                     // Lease.Extend to op.TTL
	opAttach                     // Client.Attach of a held lease's owner, op.TTL
	opSemTry                     // Semaphore TryAcquire, op.Weight
	opSemAcquire                 // Semaphore Acquire, op.Weight, waiting
	opSetLimit                   // Semaphore SetLimit(op.Limit)
	opReadTry                    // RWMutex TryRLock
	opReadAcquire                // RWMutex RLock, waiting
	opWriteTry                   // RWMutex TryLock
	opWriteAcquire               // RWMutex Lock, waiting
	opCampaign                   // Campaign, waiting
	opProclaim                   // Leadership.Proclaim of a held leadership
	opForce                      // ForceRelease of the name
	opForceHolder                // ForceReleaseHolder of a held lease's owner
	opInspect                    // Inspect (and the shared kinds' Inspect)
	opList                       // engine.Lister.List of the round's names
	opBadWeight                  // Semaphore TryAcquire with a weight above the limit: an argument error
	opKill                       // the client dies: it stops, leaving its leases to expire
	opGhost                      // a fair waiter that dies queued (engine.Queuer), op.Wait its entry's ttl
	opDrop                       // the client's connection loses the next reply (Harness.Faulty)
	opStall                      // the client's connections stall for op.Wait, while it goes on (Faults.Stall)
	opRestart                    // the backend restarts (Faults.Restart)
	opSetTry                     // Client.TryAcquireAll of names Name and Name2 (mutexes)
	opSetAcquire                 // Client.AcquireAll of names Name and Name2, waiting op.Wait at most
)

var opNames = [...]string{"try", "acquire", "reenter", "release", "extend", "attach", "sem-try", "sem-acquire",
	"set-limit", "read-try", "read-acquire", "write-try", "write-acquire", "campaign", "proclaim",
	"force-release", "force-release-holder", "inspect", "list", "bad-weight", "kill", "ghost-waiter", "drop-reply", "stall", "restart", "set-try", "set-acquire"}

func (k opKind) String() string { return opNames[k] }

// waits reports whether the operation waits for its lock.
func (k opKind) waits() bool {
	return k == opAcquire || k == opSemAcquire || k == opReadAcquire || k == opWriteAcquire || k == opCampaign || k == opSetAcquire
}

// acquires reports whether the operation asks for a grant.
func (k opKind) acquires() bool {
	switch k {
	case opTry, opAcquire, opReenter, opSemTry, opSemAcquire, opReadTry, opReadAcquire, opWriteTry, opWriteAcquire, opCampaign, opGhost,
		opSetTry, opSetAcquire:
		return true
	}
	return false
}

// lockClass is how the specification sees a grant: the kinds that exclude
// each other on one name.
type lockClass uint8

const (
	classNone  lockClass = iota
	classMutex           // a mutex or an election
	classSem             // a semaphore permit
	classRead            // a reader-writer lock's read side
	classWrite           // its write side
)

func (c lockClass) String() string {
	return [...]string{"none", "mutex", "semaphore", "read", "write"}[c]
}

// class returns the lock class an acquiring operation asks for.
func (k opKind) class() lockClass {
	switch k {
	case opTry, opAcquire, opReenter, opCampaign, opGhost, opSetTry, opSetAcquire:
		return classMutex
	case opSemTry, opSemAcquire, opBadWeight:
		return classSem
	case opReadTry, opReadAcquire:
		return classRead
	case opWriteTry, opWriteAcquire:
		return classWrite
	}
	return classNone
}

// family is what the engines store with a name: a mutex (and election), a
// semaphore, or a reader-writer lock. Two classes of different families
// refuse each other with an argument error (engine.KindError).
func (c lockClass) family() int {
	switch c {
	case classMutex:
		return 1
	case classSem:
		return 2
	case classRead, classWrite:
		return 3
	}
	return 0
}

// conflicts reports whether grants of classes a and b exclude each other
// (semaphores are judged by weight, not here).
func conflicts(a, b lockClass) bool {
	if a == classSem && b == classSem || a == classRead && b == classRead {
		return false
	}
	return true
}

// op is one step of a client's schedule. Slot picks one of the client's
// held leases (modulo their number) for the operations that need one.
type op struct {
	Kind   opKind
	Name   int
	Name2  int // a set's second name (opSetTry, opSetAcquire)
	TTL    time.Duration
	Wait   time.Duration
	Weight int
	Limit  int
	Slot   int
	Fair   bool
	Gap    time.Duration // sleep before the operation
}

func (o op) String() string {
	var b strings.Builder
	if o.Name < 0 {
		fmt.Fprintf(&b, "%s held#%d", o.Kind, o.Slot)
	} else {
		fmt.Fprintf(&b, "%s n%d", o.Kind, o.Name)
	}
	if o.Kind == opSetTry || o.Kind == opSetAcquire {
		fmt.Fprintf(&b, "+n%d", o.Name2)
	}
	if o.TTL > 0 {
		fmt.Fprintf(&b, " ttl=%v", o.TTL)
	}
	if o.Kind.waits() || o.Kind == opGhost || o.Kind == opStall {
		fmt.Fprintf(&b, " wait=%v", o.Wait)
	}
	if o.Weight > 0 {
		fmt.Fprintf(&b, " weight=%d", o.Weight)
	}
	if o.Kind == opSetLimit {
		fmt.Fprintf(&b, " limit=%d", o.Limit)
	}
	if o.Fair {
		b.WriteString(" fair")
	}
	if o.Gap > 0 {
		fmt.Fprintf(&b, " after %v", o.Gap)
	}
	return b.String()
}

// schedule is what one seed generates: each client's operations, run
// concurrently (or, Sequential, one at a time in round-robin order with
// ttls too long to expire: the differential replay).
type schedule struct {
	Seed       uint64
	Names      int
	Clients    [][]op
	Sequential bool
}

func (s schedule) String() string {
	var b strings.Builder
	for i, ops := range s.Clients {
		fmt.Fprintf(&b, "  client %d:", i)
		for _, o := range ops {
			fmt.Fprintf(&b, "\n    %v", o)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ops counts the schedule's operations.
func (s schedule) ops() int {
	n := 0
	for _, c := range s.Clients {
		n += len(c)
	}
	return n
}

// semLimit is the limit every client declares for the checker's semaphores;
// SetLimit picks among semLimits.
const semLimit = 3

var semLimits = []int{2, 3, 4}

// genConfig is what the generator may use: the engine's abilities and the
// schedule's size and time scale.
type genConfig struct {
	clients, names, ops int
	base                time.Duration // the shortest ttl (fitted to the engine)
	shared, semaphores  bool          // engine.Sharer; semaphores above limit 1
	fair, lister        bool          // Capabilities.Fair; engine.Lister
	drops               bool          // Harness.Faulty: replies may be lost
	stalls, restarts    bool          // Faults.Stall, Faults.Restart
	forcer, holderForce bool          // engine.ForceReleaser; engine.HolderReleaser
	sets                bool          // sets of locks (AcquireAll), added on a stream of their own
}

// generate builds the schedule of seed. Name 0 is the fair name when the
// engine is fair: the busiest name, asked for as a mutex (or election)
// only, and every waiting operation on it is a fair mutex Acquire,
// and ghost waiters (fair queue entries that are never heartbeated) queue
// on it, so that the checker can tell when a newcomer skipped the queue.
func generate(seed uint64, g genConfig, sequential bool) schedule {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := schedule{Seed: seed, Names: g.names, Sequential: sequential}
	type weighted struct {
		k opKind
		w int
	}
	table := []weighted{{opTry, 8}, {opAcquire, 5}, {opReenter, 3}, {opRelease, 10}, {opExtend, 4}, {opAttach, 2},
		{opCampaign, 2}, {opProclaim, 2}, {opInspect, 5}}
	if g.shared {
		table = append(table, weighted{opReadTry, 4}, weighted{opReadAcquire, 2}, weighted{opWriteTry, 3}, weighted{opWriteAcquire, 2})
	}
	if g.semaphores {
		table = append(table, weighted{opSemTry, 5}, weighted{opSemAcquire, 3}, weighted{opSetLimit, 1}, weighted{opBadWeight, 1})
	}
	if g.forcer {
		table = append(table, weighted{opForce, 1})
	}
	if g.holderForce {
		table = append(table, weighted{opForceHolder, 1})
	}
	if g.lister {
		table = append(table, weighted{opList, 2})
	}
	if !sequential {
		table = append(table, weighted{opKill, 1})
		if g.fair {
			table = append(table, weighted{opGhost, 3})
		}
		if g.drops {
			table = append(table, weighted{opDrop, 3})
		}
		if g.stalls {
			table = append(table, weighted{opStall, 2})
		}
		if g.restarts {
			table = append(table, weighted{opRestart, 1})
		}
	}
	total := 0
	for _, w := range table {
		total += w.w
	}
	pick := func() opKind {
		n := rng.IntN(total)
		for _, w := range table {
			if n < w.w {
				return w.k
			}
			n -= w.w
		}
		return opInspect
	}
	for range g.clients {
		ops := make([]op, 0, g.ops)
		for range g.ops {
			o := op{Kind: pick(), Name: rng.IntN(g.names), Slot: rng.IntN(4)}
			if g.fair && rng.IntN(3) == 0 {
				o.Name = 0 // the fair name is the busiest: queues form there
			}
			if g.fair && o.Name == 0 && o.Kind.class() != classMutex && o.Kind.class() != classNone && g.names > 1 {
				o.Name = 1 + rng.IntN(g.names-1) // the fair name is a mutex's: the kinds meet on the others
			}
			if sequential {
				o.TTL = time.Minute // nothing expires: the answers do not depend on timing
				if o.Kind.waits() {
					o.Wait = 0
					o.Kind = map[opKind]opKind{opAcquire: opTry, opSemAcquire: opSemTry, opReadAcquire: opReadTry,
						opWriteAcquire: opWriteTry, opCampaign: opTry}[o.Kind]
				}
			} else {
				o.TTL = g.base * time.Duration(1+rng.IntN(3))
				o.Wait = g.base / 2 * time.Duration(1+rng.IntN(3))
				o.Gap = time.Duration(rng.Int64N(int64(g.base / 6)))
			}
			switch o.Kind {
			case opSemTry, opSemAcquire:
				o.Weight = 1 + rng.IntN(2)
			case opBadWeight:
				o.Weight = slices.Max(semLimits) + 1 + rng.IntN(2) // above every limit a SetLimit may set
			case opSetLimit:
				o.Limit = semLimits[rng.IntN(len(semLimits))]
			}
			if g.fair && o.Name == 0 && o.Kind.waits() {
				// Long waits, so that a queue forms that newcomers must
				// respect.
				o.Kind, o.Fair = opAcquire, true
				o.Wait = g.base * time.Duration(2+rng.IntN(4))
			}
			switch o.Kind {
			case opRelease, opExtend, opAttach, opProclaim, opReenter, opForceHolder:
				o.Name = -1 // the held lease's name
			}
			if o.Kind == opKill || o.Kind == opDrop || o.Kind == opStall || o.Kind == opRestart {
				o.Name = -1
			}
			if o.Kind == opStall {
				o.Wait = stallFor(rng, g.base)
			}
			if o.Kind == opGhost {
				o.Name, o.Wait = 0, 4*g.base
			}
			if o.Kind != opExtend && o.Kind != opAttach && o.Kind != opBadWeight && !o.Kind.acquires() {
				o.TTL = 0
			}
			ops = append(ops, o)
		}
		s.Clients = append(s.Clients, ops)
	}
	if g.sets && g.names > 1 {
		addSets(&s, seed, g, sequential)
	}
	// Every concurrent history has each fault the backend allows, at a
	// random place: a short run of rounds would otherwise miss some.
	for _, f := range []struct {
		k  opKind
		on bool
	}{{opStall, g.stalls}, {opRestart, g.restarts}} {
		if !f.on || sequential || s.count(f.k) > 0 {
			continue
		}
		c := rng.IntN(len(s.Clients))
		o := op{Kind: f.k, Name: -1}
		if f.k == opStall {
			o.Wait = stallFor(rng, g.base)
		}
		s.Clients[c][rng.IntN(len(s.Clients[c]))] = o
	}
	return s
}

// addSets inserts two sets of locks (AcquireAll or TryAcquireAll of two
// names) into each client's operations, drawn from a random stream of
// their own: the other operations stay those of the seed without sets.
// Name 0, the fair name of a fair engine, is left out (a set waits in
// sorted order, not as the fair queue's newcomer test expects).
func addSets(s *schedule, seed uint64, g genConfig, sequential bool) {
	rng := rand.New(rand.NewPCG(seed^0x5e75, seed^0x51de))
	first := 0
	if g.fair {
		first = 1
	}
	if g.names-first < 2 {
		return
	}
	for c := range s.Clients {
		for range 2 {
			a := first + rng.IntN(g.names-first)
			b := first + rng.IntN(g.names-first-1)
			if b >= a {
				b++
			}
			o := op{Kind: opSetTry, Name: a, Name2: b, TTL: time.Minute}
			if !sequential {
				if rng.IntN(2) == 0 {
					o.Kind, o.Wait = opSetAcquire, g.base/2*time.Duration(1+rng.IntN(3))
				}
				o.TTL = g.base * time.Duration(1+rng.IntN(3))
				o.Gap = time.Duration(rng.Int64N(int64(g.base / 6)))
			}
			at := rng.IntN(len(s.Clients[c]) + 1)
			s.Clients[c] = slices.Insert(s.Clients[c], at, o)
		}
	}
}

// count counts the schedule's operations of kind k.
func (s schedule) count(k opKind) int {
	n := 0
	for _, ops := range s.Clients {
		for _, o := range ops {
			if o.Kind == k {
				n++
			}
		}
	}
	return n
}

// stallFor draws a stall's length: up to twice the shortest ttl, so that
// leases expire in it.
func stallFor(rng *rand.Rand, base time.Duration) time.Duration {
	return base / 2 * time.Duration(1+rng.IntN(4))
}
