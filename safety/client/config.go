// Package client is one lab client: a loop that acquires a lock, does
// read-modify-writes on the protected resource (fenced, and the unfenced
// control) and releases, recording every step in the history. The same loop
// runs as a goroutine inside the lab or as a separate process (so that it can
// be SIGSTOPped or killed).
package client

import (
	"encoding/json"
	"time"
)

// Lease implementations a client can use.
const (
	// ImplLibrary is distlock's own Client and Lease.
	ImplLibrary = "library"
	// ImplNoValidity is a naive lease for a negative control: it trusts a
	// grant however late its reply arrives (validity check off).
	ImplNoValidity = "naive-no-validity"
	// ImplFromReply is a naive lease for a negative control: validity is
	// measured from the reply of an acquire or renewal, not from its send.
	ImplFromReply = "naive-from-reply"
	// ImplIgnoreLoss is the election scenarios' negative control: the real
	// Client and Campaign, but a leader that ignores its leadership's loss
	// signal (Done/Context) and keeps acting for one more ttl after it.
	ImplIgnoreLoss = "leader-ignores-loss"
	// ImplLateLoss is I6's negative control: the real Client, behind a
	// lease that tells its holder of a loss LateLoss after the library
	// did (Valid stays true, Done and Loss come late), as a library whose
	// deadline timer fired late would.
	ImplLateLoss = "loss-signal-late"
)

// LateLoss is how late ImplLateLoss tells its holder of a loss.
const LateLoss = 250 * time.Millisecond

// Styles of acquiring.
const (
	// StyleWait uses Acquire (waiting by notification).
	StyleWait = "wait"
	// StylePoll loops on TryAcquire with short sleeps.
	StylePoll = "poll"
)

// Config is everything a client needs; a process client gets it as JSON.
type Config struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`     // lock name
	Nodes    []string `json:"nodes"`    // lock node addresses (through this client's proxies)
	Resource string   `json:"resource"` // resource server address (through its proxy)
	Redlock  bool     `json:"redlock"`  // quorum over Nodes, else Nodes[0] alone
	Impl     string   `json:"impl"`
	Style    string   `json:"style"`

	TTL         time.Duration `json:"ttl"`
	NodeTimeout time.Duration `json:"node_timeout"` // quorum per-node timeout
	// NoFencing skips quorum phase 2 (negative control).
	NoFencing bool `json:"no_fencing"`
	// NoQuorumValidity turns the quorum's validity check off (negative
	// control).
	NoQuorumValidity bool `json:"no_quorum_validity"`
	// Sentinel: Nodes are the addresses of the sentinels of one
	// Sentinel-managed deployment (master redistest.SentinelMaster),
	// reached through a go-redis failover client, without proxies.
	Sentinel bool `json:"sentinel,omitempty"`
	// NoTimeFloor builds the Redis engines WithoutTimeFloor (negative
	// control): tokens count up from the high-water, which a failover to
	// a replica that missed grants brings back stale.
	NoTimeFloor bool `json:"no_time_floor,omitempty"`
	// NoFence writes the fenced copy with plain commands (I5's negative
	// control): the history still calls it fenced, but nothing refuses
	// a stale token.
	NoFence bool `json:"no_fence,omitempty"`

	MaxOps    int           `json:"max_ops"`    // read-modify-writes per hold, at most
	MinHold   time.Duration `json:"min_hold"`   // keep doing them for at least this long
	Think     time.Duration `json:"think"`      // pause between read-modify-writes
	Gap       time.Duration `json:"gap"`        // between the lease check and the write
	OpTimeout time.Duration `json:"op_timeout"` // one resource call
	Budget    time.Duration `json:"budget"`     // one Acquire's wait budget
	Seed      uint64        `json:"seed"`

	// Queue lets the Client see the engine's waiter queue (engine.Queuer,
	// single-node mode only): a waiting Acquire enters the lock's queue in
	// Redis. Without it the lab's engine wrapper hides the queue (it
	// embeds engine.Engine only) and waiters wait by subscription, as on
	// an engine without a queue.
	Queue bool `json:"queue,omitempty"`
	// Policy is the client's waiting policy in the queue scenarios
	// (history.PolicyFair or PolicyDefault), recorded on its waiting
	// calls; a fair client passes distlock.WithFair when it sees the
	// queue (Queue), and waits without it otherwise (the queue-hidden
	// control). Empty for the other scenarios.
	Policy string `json:"policy,omitempty"`
	// Elect makes the client a campaigner (the election scenarios): each
	// hold is a leadership of the election Name, won with
	// distlock.Client.Campaign (value: the client's id), its term the
	// token of every resource apply; it ends with Resign, and the leader
	// records a KindLeaderEnd event when it stops acting.
	Elect bool `json:"elect,omitempty"`

	// Backend is the lock service and the resource's store: "" (Redis:
	// Nodes are redis-server addresses, the resource a redis-server of its
	// own), BackendEtcd (Nodes are the client URLs of the etcd members;
	// both resource copies are keys in the same cluster, the fenced one
	// written through etcdfence) or BackendPostgres (Nodes[0] is a
	// connection URL; both copies are rows of the same database, the
	// fenced one written with pgfence's check in the same transaction).
	Backend string `json:"backend,omitempty"`

	// Shared makes every hold a shared lock's grant (the shared-lock
	// scenarios): SharedSemaphore (Client.Semaphore(Name, Limit), weights
	// 1..min(2, Limit) at random) or SharedRW (Client.RWMutex(Name): a
	// writer one hold in three, else a reader). The holds do no resource
	// writes (several holders at once are the point); they check their
	// lease now and then (KindChecked), which triggers the faults.
	Shared string `json:"shared,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	// Split is the shared-lock negative control: each client locks a name
	// of its own (Name/ID) while the history says Name, as a lock whose
	// state is not shared between clients would.
	Split bool `json:"split,omitempty"`
	// PGFence is pgfence's mode for BackendPostgres: PGCurrent (default)
	// or PGHighestSeen.
	PGFence string `json:"pg_fence,omitempty"`
	// Session is the ZooKeeper session timeout the client asks for
	// (BackendZooKeeper); the ttl may not exceed it.
	Session time.Duration `json:"session,omitempty"`
}

// Shared lock kinds (Config.Shared).
const (
	SharedSemaphore = "semaphore"
	SharedRW        = "rwmutex"
)

// Backends (Config.Backend).
const (
	BackendRedis    = ""
	BackendEtcd     = "etcd"
	BackendPostgres = "postgres"
	// BackendZooKeeper: Nodes are the client addresses of the ensemble's
	// members; both resource copies are znodes of the same ensemble, the
	// fenced one written through zkfence.
	BackendZooKeeper = "zookeeper"
)

// pgfence modes (Config.PGFence).
const (
	PGCurrent     = "current"
	PGHighestSeen = "highest-seen"
)

// Marshal renders c as JSON.
func (c Config) Marshal() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Unmarshal parses a Config rendered by Marshal.
func Unmarshal(s string) (Config, error) {
	var c Config
	err := json.Unmarshal([]byte(s), &c)
	return c, err
}

// Drift is distlock's clock-drift allowance for ttl: ttl/100 + 2ms.
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }
