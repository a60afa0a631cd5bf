package redis

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/luascript"
)

// The acquire and release scripts run on every lock operation, so their
// commands are built here without go-redis's Script.Run, which boxes every
// key and argument into an interface of its own (one allocation each) and
// copies them into a second slice. A command's arguments and the strings
// they point to are one allocation (evalArgs); a string argument is boxed
// as a pointer to it (*strArg), which takes no allocation.

// strArg is a string argument of a command, boxed as *strArg: go-redis
// writes it through encoding.BinaryMarshaler and prints it (cmd.String,
// hooks, tracing) through fmt.Stringer.
type strArg string

// MarshalBinary returns the string's bytes without copying them: go-redis
// only writes them to the connection.
func (s *strArg) MarshalBinary() ([]byte, error) {
	return unsafe.Slice(unsafe.StringData(string(*s)), len(*s)), nil
}

func (s *strArg) String() string { return string(*s) }

// script is a Lua script run by the digest the server computed
// (luascript: nothing here computes SHA-1, so the engine runs under
// GODEBUG=fips140=only), falling back to EVAL after a NOSCRIPT. Its
// methods Run, EvalSha, Eval and Load take keys and arguments; run and
// eval take a command built by evalArgs.
type script struct{ *luascript.Script }

func newScript(src string) *script { return &script{luascript.New(src)} }

// processor runs a command: a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd goredis.Cmder) error
}

// client runs a command and loads a script: a client, not a pipeline.
type client interface {
	processor
	goredis.Scripter
}

// sendArgs sends argv (EVALSHA digest numkeys keys... args..., as built by
// evalArgs) on c.
func sendArgs(ctx context.Context, c processor, argv []any) *goredis.Cmd {
	cmd := goredis.NewCmd(ctx, argv...)
	cmd.SetFirstKeyPos(3)
	_ = c.Process(ctx, cmd)
	return cmd
}

// eval sends argv with EVAL and the script's source instead of EVALSHA.
func (s *script) eval(ctx context.Context, c processor, argv []any) *goredis.Cmd {
	a := make([]any, len(argv))
	copy(a, argv)
	a[0], a[1] = "eval", s.Source()
	return sendArgs(ctx, c, a)
}

// send sends argv on c, a client or a pipeline, with EVALSHA and the
// script's digest when it is known, else with EVAL. It loads nothing.
func (s *script) send(ctx context.Context, c processor, argv []any) *goredis.Cmd {
	d := s.Digest()
	if d == nil {
		return s.eval(ctx, c, argv)
	}
	argv[1] = d
	return sendArgs(ctx, c, argv)
}

// run sends argv with EVALSHA, loading the digest first (SCRIPT LOAD, once
// per process) if no server has answered it yet, and with EVAL when the
// server does not have the script cached (after a restart or SCRIPT FLUSH)
// or the digest could not be loaded, as Script.Run does.
func (s *script) run(ctx context.Context, c client, argv []any) *goredis.Cmd {
	if s.Ensure(ctx, c) == nil {
		return s.eval(ctx, c, argv)
	}
	cmd := s.send(ctx, c, argv)
	if isNoScript(cmd.Err()) {
		return s.eval(ctx, c, argv)
	}
	return cmd
}

// evalArgs builds the argument list of one script command in buffers of
// its caller's, one allocation: the command, a place for the script's
// digest (filled in when it is sent: send, run) and the number of keys,
// then the keys and arguments; a string argument is kept in strs and boxed
// as a pointer to it.
type evalArgs struct {
	argv []any
	strs []strArg
}

func newEvalArgs(numKeys int, argv []any, strs []strArg) evalArgs {
	// numKeys < 256: boxed without an allocation.
	return evalArgs{argv: append(argv[:0], "evalsha", nil, numKeys), strs: strs[:0]}
}

// str appends a string argument.
func (a *evalArgs) str(v string) {
	if v == "" {
		a.add("") // boxing the empty string takes no allocation
		return
	}
	if len(a.strs) == cap(a.strs) {
		a.add(v) // no room left (not on the paths that evalArgs is sized for)
		return
	}
	a.strs = append(a.strs, strArg(v))
	a.add(&a.strs[len(a.strs)-1])
}

// add appends an argument that is boxed already.
func (a *evalArgs) add(v any) { a.argv = append(a.argv, v) }

// Arguments that take no allocation once boxed here.
var (
	argOne      any = "1"
	argZero     any = "0"
	argPublish  any = "PUBLISH"
	argSPublish any = "SPUBLISH"
)

func (e *Engine) publishArg() any {
	if e.publish == "SPUBLISH" {
		return argSPublish
	}
	return argPublish
}

// msCache remembers the last duration rendered by cachedMS: every request
// of a Client usually has the same ttl.
var msCache atomic.Pointer[msString]

type msString struct {
	d time.Duration
	s string
}

// cachedMS is ms(d), without an allocation when d is the last one asked.
func cachedMS(d time.Duration) string {
	if c := msCache.Load(); c != nil && c.d == d {
		return c.s
	}
	s := ms(d)
	msCache.Store(&msString{d, s})
	return s
}

// keySet is which of a lock's keys a script's command sends.
type keySet uint8

const (
	// fewKeys are the keys a script needs on a name nobody waits for: for
	// acquire the lock, the queue, the shared lock's three keys and the
	// fencing high-water; for release the lock alone. A script that
	// needs more changes nothing and says so.
	fewKeys keySet = iota
	// allKeys are every key the script may touch.
	allKeys
)

// acquireArgs builds the acquire script's command for r (see
// scripts/acquire.lua for its keys and arguments) with the keys of set
// (keySet).
func (e *Engine) acquireArgs(r engine.AcquireRequest, set keySet) []any {
	// Room for the keys and the seven arguments of a request outside a
	// queue (a waiter's nine more are appended to a new slice), and for
	// the strings: the keys, the owner, the ttl, the metadata and the
	// attempt id.
	var a evalArgs
	if set == allKeys {
		buf := new(struct {
			argv [3 + 8 + 7]any
			strs [8 + 4]strArg
		})
		a = newEvalArgs(len(keysAcquire), buf.argv[:], buf.strs[:])
		e.keysTo(&a, r.Name, keysAcquire)
	} else {
		buf := new(struct {
			argv [3 + 6 + 7]any
			strs [6 + 4]strArg
		})
		a = newEvalArgs(len(keysAcquireFast), buf.argv[:], buf.strs[:])
		e.keysTo(&a, r.Name, keysAcquireFast)
	}
	owner := len(a.argv) // boxed once: a one-off owner is its own attempt id
	a.str(r.Owner)
	a.str(cachedMS(r.TTL))
	a.str(r.Metadata)
	a.add(e.fenceArg)
	if r.OneOff {
		a.add(a.argv[owner])
	} else {
		a.str(r.Attempt)
	}
	switch {
	case r.Announce: // waits, and the grant is published (acquire.lua)
		a.add(e.publishArg())
	case r.Waiting:
		a.add(argOne)
	default:
		a.add("")
	}
	queue := r.Waiter != "" || r.Order.Yields()
	if e.noFloor != "" || queue || r.TokenProposal != 0 { // ARGV[7] only when needed: the common grant sends less
		switch floor := e.floorArg(r); floor {
		case "0":
			a.add(argZero)
		case "":
			a.add("")
		default:
			a.str(floor)
		}
	}
	argv := a.argv
	if queue {
		argv = append(argv, r.Waiter, ms(r.WaiterTTL), flag(r.Order == engine.OrderFair), flag(r.Order.Yields()),
			e.publish, queueReserveUS, queueStarveUS, flag(r.Order == engine.OrderNoReserve), e.wakeChannel(r.Name))
	}
	return argv
}

// releaseArgs builds the release script's command (see
// scripts/release.lua) for r, with the keys of set (keySet: allKeys are
// the lock and its queue's): the grant's token (engine.ReleaseRequest.Token;
// none for any), and the undo mark when r.Undo.
func (e *Engine) releaseArgs(r engine.ReleaseRequest, id string, set keySet) []any {
	buf := new(struct {
		argv [3 + 4 + 5]any
		strs [4 + 3]strArg
	})
	keys := keysRelease
	if set == fewKeys {
		keys = keysLock
	}
	a := newEvalArgs(len(keys), buf.argv[:], buf.strs[:])
	e.keysTo(&a, r.Name, keys)
	a.str(r.Owner)
	a.add(e.publishArg())
	a.str(id)
	if token := tokenArg(r.Token); token != "" || r.Undo {
		a.str(token)
	}
	if r.Undo {
		a.add(argOne)
	}
	return a.argv
}

// The keys of a lock that a command sends, by index in keySuffixes (0 to 4
// as keys returns them).
var (
	keysAcquire     = []int{0, 1, 2, 3, 5, 6, 7, 4} // every key, the high-water last
	keysAcquireFast = []int{0, 1, 5, 6, 7, 4}       // the lock, the queue, the shared lock's, the high-water
	keysRelease     = []int{0, 1, 2, 3}             // the lock and its queue
	keysLock        = []int{0}
)

// keySuffixes are the lock's keys (keys) and the shared lock's that the
// mutex's acquire reads: its hash (kind), its holders and its waiters'
// heartbeat deadlines (scripts/shared.lua).
var keySuffixes = [8]string{"", ":q", ":qd", ":qs", ":fence", ":s", ":sh", ":sqd"}

// keysTo appends the keys of lock name at the indexes which, built in one
// allocation.
func (e *Engine) keysTo(a *evalArgs, name string, which []int) {
	base := len(e.prefix) + len(name) + 2
	n := 0
	for _, i := range which {
		n += base + len(keySuffixes[i])
	}
	var b strings.Builder
	b.Grow(n)
	for _, i := range which {
		b.WriteString(e.prefix)
		b.WriteByte('{')
		b.WriteString(name)
		b.WriteByte('}')
		b.WriteString(keySuffixes[i])
	}
	all := b.String()
	for _, i := range which {
		k := base + len(keySuffixes[i])
		a.str(all[:k])
		all = all[k:]
	}
}

// runAcquire runs the acquire script for r: outside the queue (no waiter,
// not behind) with the lock, the queue and the high-water alone, unless the
// name is contended (see contended), and again with every key when that
// answers that it needs them. A marked grant's token comes back without
// its mark, and makes the name contended; an unmarked one makes it not.
func (e *Engine) runAcquire(ctx context.Context, r engine.AcquireRequest) (any, error) {
	set := fewKeys
	if r.Waiter != "" || r.Order.Yields() || e.contended.has(r.Name) {
		set = allKeys
	}
	res, err := e.batch.runArgs(ctx, acquireScript, e.acquireArgs(r, set)).Result()
	if err == nil && set == fewKeys && res == int64(2) {
		e.contended.add(r.Name)
		res, err = e.batch.runArgs(ctx, acquireScript, e.acquireArgs(r, allKeys)).Result()
	}
	if t, ok := res.(string); ok && err == nil {
		if strings.HasSuffix(t, "*") {
			e.contended.add(r.Name)
			return t[:len(t)-1], nil
		}
		e.contended.remove(r.Name)
	}
	return res, err
}

// runRelease runs the release script for r: with the lock alone unless
// the name is contended or r is an Undo (which may put a waiter back in
// the queue), and again with the queue's keys when that answers that the
// lock is marked (freeing it wakes the queue), which makes the name
// contended.
func (e *Engine) runRelease(ctx context.Context, r engine.ReleaseRequest, id string) (int64, error) {
	set := fewKeys
	if r.Undo || e.contended.has(r.Name) {
		set = allKeys
	}
	n, err := e.batch.runArgs(ctx, releaseScript, e.releaseArgs(r, id, set)).Int64()
	if err == nil && set == fewKeys && n == -3 {
		e.contended.add(r.Name)
		n, err = e.batch.runArgs(ctx, releaseScript, e.releaseArgs(r, id, allKeys)).Int64()
	}
	return n, err
}

// contendedNames are the names whose last grant by the engine was marked
// (waiters queued), or for which a script sent without the queue's keys
// answered that it needed them: their next acquire and release send every
// key at once rather than a second time. Only a round trip depends on it,
// never the outcome: a script sent without the keys it needs changes
// nothing and says so. Empty, it costs an atomic load.
type contendedNames struct {
	n     atomic.Int64
	names sync.Map // name -> struct{}
}

// maxContended bounds contendedNames: names whose locks are left to expire
// are never removed, so past the bound it starts over.
const maxContended = 1 << 14

func (c *contendedNames) has(name string) bool {
	if c.n.Load() <= 0 {
		return false
	}
	_, ok := c.names.Load(name)
	return ok
}

func (c *contendedNames) add(name string) {
	if _, loaded := c.names.LoadOrStore(name, struct{}{}); loaded {
		return
	}
	if c.n.Add(1) > maxContended {
		c.names.Range(func(k, _ any) bool {
			c.remove(k.(string))
			return true
		})
	}
}

func (c *contendedNames) remove(name string) {
	if c.n.Load() <= 0 {
		return
	}
	if _, ok := c.names.LoadAndDelete(name); ok {
		c.n.Add(-1)
	}
}
