package distlock

import (
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
)

// Defaults and limits.
const (
	// DefaultTTL is a lease's time to live unless WithTTL says otherwise.
	DefaultTTL = 30 * time.Second
	// MinTTL is the shortest time to live that can be renewed in time.
	MinTTL = rules.MinTTL
	// MaxTTL is the longest time to live accepted.
	MaxTTL = rules.MaxTTL
	// MaxNameLen is the longest lock name accepted, in bytes.
	MaxNameLen = engine.MaxNameLen
	// MaxOwnerLen is the longest owner id accepted, in bytes.
	MaxOwnerLen = rules.MaxOwnerLen
	// MaxMetadataLen is the longest metadata string accepted, in bytes.
	MaxMetadataLen = rules.MaxMetadataLen
)

// Option configures one Acquire, TryAcquire, Do or Attach call.
type Option func(*options)

type options struct {
	ttl       time.Duration
	autoRenew bool
	owner     string
	metadata  string
	fair      bool
	announce  bool // an election's campaign (engine.AcquireRequest.Announce)
	weight    int  // WithWeight's
	weightSet bool // WithWeight was given
	weightRW  bool // WithWeight was given to an RWMutex
	// A shared lock's call (Semaphore, RWMutex): its kind and limit.
	kind  engine.Kind
	limit int
	// WithMaxHold's (maxhold.go)
	maxHold    time.Duration
	maxHoldSet bool
}

// shared reports whether the call is a shared lock's.
func (o *options) shared() bool { return o.kind != 0 }

func defaultOptions() options {
	return options{ttl: DefaultTTL, autoRenew: true}
}

// WithTTL sets the lease's time to live (default 30s; between 50ms and
// 24h). With auto-renewal on, it is renewed every ttl/3, and the holder is
// told of a loss no later than ttl after the last confirmed renewal was sent.
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithAutoRenew turns the lease's watchdog on (the default) or off. Without
// it the lease ends at its local validity deadline unless Extend is called;
// Done is closed then.
func WithAutoRenew(on bool) Option { return func(o *options) { o.autoRenew = on } }

// WithOwner sets an explicit owner id instead of a fresh random token. Two
// acquisitions with the same owner id re-enter the lock: the hold count goes
// up, the fencing token stays, and the lock is freed when every hold was
// released. The holds share the authority's expiry: while there is more
// than one, an acquire or Extend only moves it later, so no lease of the
// owner outlives it (a lone lease's Extend may shorten it). Anyone who
// knows the owner id can extend or release the lock, so make it unique to
// the holder (for example host name plus job id).
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithMetadata attaches a string to the grant (at most 4096 bytes of UTF-8) that
// Inspect reports, for example who holds the lock and why.
func WithMetadata(s string) Option { return func(o *options) { o.metadata = s } }

// WithFair makes a waiting Acquire strictly first-come, first-served
// across every Client and process: it enters the lock's waiter queue in the
// lock authority, and while a fair waiter heads the queue only it can take
// the lock; a release reserves the lock for it. Without it the queue still
// wakes only its head, but a newcomer may take a free lock first (more
// throughput), until the head has been passed over for a short bound
// (engine.StarvationBound). A quorum (engine/quorum), whose nodes each keep
// a queue of their own and so cannot promise one order, answers an
// *UnsupportedError. TryAcquire ignores it.
func WithFair() Option { return func(o *options) { o.fair = true } }

// WithWeight takes n permits of a Semaphore at once (default 1; at most
// the semaphore's stored limit). Waiters are served in arrival order with
// their weights, so a large request at the head is not overtaken by later
// small ones (within the queue's life: see Semaphore). Only Semaphore.Acquire and TryAcquire take it. A weight
// below 1 is refused with an *ArgumentError, 0 included: unlike
// x/sync/semaphore.Weighted.Acquire(ctx, 0), which takes nothing, every
// grant holds at least one permit (a lease with nothing to hold would
// guard nothing).
func WithWeight(n int) Option { return func(o *options) { o.weight, o.weightSet = n, true } }

func buildOptions(opts []Option) options {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// checkOptions validates o, and fits its ttl to the engine's (see
// engine.Capabilities.FitTTL: etcd's whole seconds).
func (c *Client) checkOptions(o *options) error {
	if err := o.validate(); err != nil {
		return err
	}
	o.ttl, _ = rules.FitTTL(c.eng, o.ttl) // (validate checked it)
	return nil
}

func (o *options) validate() error {
	if err := ValidateTTL(o.ttl); err != nil {
		return err
	}
	switch {
	case o.weightRW || o.weightSet && o.kind == 0:
		return &ArgumentError{Arg: "weight", Reason: "WithWeight is for semaphores"}
	case o.kind == engine.Semaphore:
		if err := ruleErr(rules.Limit(o.limit)); err != nil {
			return err
		}
		if err := ruleErr(rules.Weight(o.weight)); err != nil {
			return err
		}
	}
	if err := o.validateMaxHold(); err != nil {
		return err
	}
	if err := ValidateOwner(o.owner); err != nil {
		return err
	}
	return ValidateMetadata(o.metadata)
}

// ValidateTTL checks a lease ttl as every call does: from MinTTL to MaxTTL.
// It returns an *ArgumentError. Like ValidateName, it is the rule that
// servers and tools apply too.
func ValidateTTL(ttl time.Duration) error { return ruleErr(rules.TTL(ttl)) }

// ValidateOwner checks an owner token (WithOwner): at most MaxOwnerLen
// bytes of UTF-8; empty means a fresh random owner. It returns an
// *ArgumentError.
func ValidateOwner(owner string) error { return ruleErr(rules.Owner(owner)) }

// ValidateMetadata checks a lease's metadata (WithMetadata): at most
// MaxMetadataLen bytes of UTF-8. It returns an *ArgumentError.
func ValidateMetadata(m string) error { return ruleErr(rules.Metadata(m)) }

// ValidateName checks a lock name with the rule every call applies on
// every engine (engine.ValidateName): 1 to 512 bytes of UTF-8, without a
// NUL byte, not starting with '}'. It returns an *ArgumentError. Servers
// and tools use it to reject a name before doing anything with it. (A
// third-party engine may add rules of its own, engine.NameChecker, which
// every Client call checks as well.)
func ValidateName(name string) error {
	return ruleErr(engine.ValidateName(name))
}

// ruleErr turns a rule's refusal (package internal/rules, or engine's)
// into an *ArgumentError; nil stays nil.
func ruleErr(err error) error {
	if err == nil {
		return nil
	}
	return argumentFrom(err)
}

// drift is the clock-drift allowance subtracted from a lease's validity:
// 1% of the ttl plus 2ms.
func drift(ttl time.Duration) time.Duration { return engine.Drift(ttl) }
