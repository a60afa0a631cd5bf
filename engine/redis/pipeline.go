package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/luascript"
)

// Auto-pipelining (group commit) of the acquire and release scripts.
//
// At most max script round trips of one Engine are in flight at a time. A
// caller that finds a free slot runs its script at once on its own goroutine
// (EVALSHA, then EVAL after a NOSCRIPT, exactly as without batching), so a
// lone caller pays nothing.
// A caller that finds every slot taken queues its command and waits. When a
// round trip ends and the queue is not empty, its slot goes to a flusher
// goroutine that sends the queued commands (up to maxBatch) as one pipeline,
// hands each caller its own reply, and repeats while the queue is not
// empty; then the slot is freed. Redis, single-threaded, then reads and
// answers a whole batch with one syscall pair instead of one per command.
//
// Every script is safe to run twice and safe to run with its outcome
// unknown (attempt ids, release ids, owner tokens), so a caller whose
// context ends stops waiting and returns the context's error while its
// command may still be applied, as with a lost reply.

// DefaultMaxInflight is the number of acquire and release round trips an
// Engine keeps in flight unless WithMaxInflight says otherwise; callers
// beyond it are sent together in one pipeline as soon as one round trip
// ends.
const DefaultMaxInflight = 4

// maxBatch caps the commands of one pipeline.
const maxBatch = 128

// batchTimeout bounds a batch that holds a caller without a deadline.
const batchTimeout = 5 * time.Second

// call states, guarded by batcher.mu.
const (
	queued    = iota // waits in the queue
	taken            // part of a batch being sent
	abandoned        // its caller left before it was sent: skip it
)

// call is one queued script command and, once done has a value, its reply.
// Calls are reused (callPool) once their caller got the reply; a call left
// by its caller is not.
type call struct {
	ctx    context.Context
	script *script // run with keys and args (run)
	keys   []string
	args   []any
	fast   *script // with argv instead of script, keys and args (runArgs)
	argv   []any   // the whole EVALSHA command
	state  int
	cmd    *goredis.Cmd  // the reply, set before done is signalled
	done   chan struct{} // one value per use: the reply is in cmd
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// reply signals c's caller that c.cmd is set; it never blocks.
func (c *call) reply(cmd *goredis.Cmd) {
	c.cmd = cmd
	c.done <- struct{}{}
}

// result returns c's reply, which is there, and puts c back in the pool.
func (c *call) result() *goredis.Cmd {
	cmd := c.cmd
	*c = call{done: c.done}
	callPool.Put(c)
	return cmd
}

// batcher limits the round trips in flight and pipelines the overflow.
type batcher struct {
	client  goredis.UniversalClient
	max     int // round trips in flight; < 1 turns batching off
	mu      sync.Mutex
	running int     // round trips in flight (direct runs and flushers)
	queue   []*call // commands waiting for a slot
	closed  bool
	wg      sync.WaitGroup // flushers
}

func newBatcher(c goredis.UniversalClient, n int) *batcher {
	return &batcher{client: c, max: n}
}

// run runs script s with keys and args, directly when a slot is free, in
// the next pipeline otherwise, and returns its reply.
func (b *batcher) run(ctx context.Context, s *script, keys []string, args ...any) *goredis.Cmd {
	b.mu.Lock()
	if b.closed || b.max < 1 {
		b.mu.Unlock()
		return s.Run(ctx, b.client, keys, args...)
	}
	if b.running < b.max {
		b.running++
		b.mu.Unlock()
		cmd := s.Run(ctx, b.client, keys, args...)
		b.next()
		return cmd
	}
	c := callPool.Get().(*call)
	c.ctx, c.script, c.keys, c.args = ctx, s, keys, args
	return b.wait(c)
}

// wait queues c, whose caller holds b.mu, and waits for its reply.
func (b *batcher) wait(c *call) *goredis.Cmd {
	ctx := c.ctx
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.result()
	case <-ctx.Done():
	}
	b.mu.Lock()
	if c.state == queued {
		c.state = abandoned
	}
	b.mu.Unlock()
	select {
	case <-c.done: // the reply came after all
		return c.result()
	default: // a batch may still hold c: it is not reused
	}
	cmd := goredis.NewCmd(ctx)
	cmd.SetErr(ctx.Err())
	return cmd
}

// runArgs runs argv, a command of script s built by evalArgs, as run does.
func (b *batcher) runArgs(ctx context.Context, s *script, argv []any) *goredis.Cmd {
	b.mu.Lock()
	if b.closed || b.max < 1 {
		b.mu.Unlock()
		return s.run(ctx, b.client, argv)
	}
	if b.running < b.max {
		b.running++
		b.mu.Unlock()
		cmd := s.run(ctx, b.client, argv)
		b.next()
		return cmd
	}
	c := callPool.Get().(*call)
	c.ctx, c.fast, c.argv = ctx, s, argv
	return b.wait(c)
}

// next is called by the holder of a slot when its round trip has ended: the
// slot goes to a flusher for the queued commands, or is freed.
func (b *batcher) next() {
	b.mu.Lock()
	batch := b.take()
	if len(batch) == 0 {
		b.running--
		b.mu.Unlock()
		return
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go b.flush(batch)
}

// flush sends batches until the queue is empty, then frees its slot.
func (b *batcher) flush(batch []*call) {
	defer b.wg.Done()
	for len(batch) > 0 {
		b.send(batch)
		b.mu.Lock()
		batch = b.take()
		if len(batch) == 0 {
			b.running--
		}
		b.mu.Unlock()
	}
}

// take removes up to maxBatch live calls from the head of the queue and
// marks them taken. b.mu must be held.
func (b *batcher) take() []*call {
	if len(b.queue) == 0 {
		return nil
	}
	var batch []*call
	i := 0
	for ; i < len(b.queue) && len(batch) < maxBatch; i++ {
		if c := b.queue[i]; c.state == queued {
			c.state = taken
			batch = append(batch, c)
		}
	}
	n := copy(b.queue, b.queue[i:])
	clear(b.queue[n:])
	b.queue = b.queue[:n]
	return batch
}

// send runs one batch and hands every caller its reply. A batch of one is a
// plain Script.Run under its caller's context.
func (b *batcher) send(batch []*call) {
	if len(batch) == 1 {
		c := batch[0]
		if c.fast != nil {
			c.reply(c.fast.run(c.ctx, b.client, c.argv))
		} else {
			c.reply(c.script.Run(c.ctx, b.client, c.keys, c.args...))
		}
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	b.ensure(ctx, batch)
	cmds := make([]*goredis.Cmd, len(batch))
	b.pipe(ctx, batch, cmds, evalSha)
	if retry := noScriptCalls(cmds); len(retry) > 0 {
		b.rerun(ctx, batch, cmds, retry)
	}
	for i, c := range batch {
		c.reply(cmds[i])
	}
}

// ensure loads the digests of the batch's scripts that no server has
// answered yet (once per process), so that pipe sends them with EVALSHA; a
// script whose digest could not be loaded is sent with EVAL.
func (b *batcher) ensure(ctx context.Context, batch []*call) {
	for _, c := range batch {
		if s := c.scriptOf(); s.Digest() == nil {
			s.Ensure(ctx, b.client)
		}
	}
}

// scriptOf returns the script that c runs.
func (c *call) scriptOf() *script {
	if c.fast != nil {
		return c.fast
	}
	return c.script
}

// rerun sends again the commands at the indexes retry, which failed with
// NOSCRIPT (the server lost its script cache): it loads their scripts and
// runs them with EVALSHA once more, then with EVAL (never NOSCRIPT) those
// that failed again (a Ring loads a script on one shard only). Commands
// that were applied are never sent twice.
func (b *batcher) rerun(ctx context.Context, batch []*call, cmds []*goredis.Cmd, retry []int) {
	var loaded []*script
	for _, i := range retry {
		s := batch[i].scriptOf()
		if !containsScript(loaded, s) {
			loaded = append(loaded, s)
			_ = s.Load(ctx, b.client) // on failure the EVAL round below still runs it
		}
	}
	sub := make([]*call, len(retry))
	subCmds := make([]*goredis.Cmd, len(retry))
	for j, i := range retry {
		sub[j] = batch[i]
	}
	for _, mode := range []evalMode{evalSha, eval} {
		b.pipe(ctx, sub, subCmds, mode)
		var again []*call
		var againAt []int
		for j, i := range retry {
			cmds[i] = subCmds[j]
			if isNoScript(subCmds[j].Err()) {
				again = append(again, sub[j])
				againAt = append(againAt, i)
			}
		}
		if len(again) == 0 {
			return
		}
		sub, retry, subCmds = again, againAt, subCmds[:len(again)]
	}
}

// evalMode says how pipe sends a script: by its hash or with its source.
type evalMode int

const (
	evalSha evalMode = iota
	eval
)

// pipe sends the calls as one pipeline and stores each reply in cmds. The
// pipeline's own error is also every failed command's, so it is not needed.
func (b *batcher) pipe(ctx context.Context, calls []*call, cmds []*goredis.Cmd, mode evalMode) {
	_, _ = b.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, c := range calls {
			switch {
			case c.fast != nil && mode == eval:
				cmds[i] = c.fast.eval(ctx, p, c.argv)
			case c.fast != nil:
				cmds[i] = c.fast.send(ctx, p, c.argv)
			case mode == eval:
				cmds[i] = c.script.Eval(ctx, p, c.keys, c.args...)
			default:
				cmds[i] = c.script.EvalSha(ctx, p, c.keys, c.args...)
			}
		}
		return nil
	})
}

// close fails the queued calls with engine.ErrClosed (they were not sent)
// and waits for the flushers; calls made afterwards run directly.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	for _, c := range b.queue {
		if c.state == queued {
			c.state = taken
			cmd := goredis.NewCmd(c.ctx)
			cmd.SetErr(engine.ErrClosed)
			c.reply(cmd)
		}
	}
	clear(b.queue)
	b.queue = nil
	b.mu.Unlock()
	b.wg.Wait()
}

// batchContext returns the context of one batch: the values of its first
// caller's context, no cancellation, and a deadline no earlier than any
// caller's (batchTimeout from now for a caller without one).
func batchContext(batch []*call) (context.Context, context.CancelFunc) {
	var deadline, capped time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			if capped.IsZero() {
				capped = time.Now().Add(batchTimeout)
			}
			d = capped
		}
		if d.After(deadline) {
			deadline = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(batch[0].ctx), deadline)
}

// noScriptCalls returns the indexes of the commands that failed with
// NOSCRIPT.
func noScriptCalls(cmds []*goredis.Cmd) []int {
	var idx []int
	for i, c := range cmds {
		if isNoScript(c.Err()) {
			idx = append(idx, i)
		}
	}
	return idx
}

func isNoScript(err error) bool { return luascript.IsNoScript(err) }

func containsScript(list []*script, s *script) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
