package lab

import (
	"context"
	"time"
)

// Scenario is one fault class.
type Scenario struct {
	ID    int
	Key   string
	Title string
	// Modes the scenario runs in.
	Single, Redlock bool
	// Excludes reports whether the mode claims mutual exclusion of
	// validity windows (I1) under this fault.
	Excludes func(m Mode) bool
	// Teeth: the unfenced control must show a violation (lost updates or
	// overlapping windows): a lease lock cannot be safe here by nature.
	Teeth bool
	// Inject injects one fault event and heals it before returning.
	Inject func(ctx context.Context, e *env)
	// Schedule describes the injection, per mode, for the report.
	Schedule string
	// MinHold, in ttls, makes every hold last at least that long (default
	// 1: every hold renews at least twice); scenario 2 uses longer jobs, so
	// that delayed renewals come back while the job runs.
	MinHold int
	// Queue: the waiter-queue scenarios (single-node mode). The clients
	// are four waiters on the engine's queue: c0 and c1 processes and c2 a
	// goroutine, all with WithFair, and c3 a process with the default
	// policy (the signals target the processes, c3 too); holds are shorter (at least ttl/2, at most 4 writes) and
	// waits longer (10 ttl), and I8 (fair order) and I9 (liveness) apply.
	Queue bool
	// LosesQueue: the scenario loses the lock's queue, and I8 rightly
	// excludes most pairs of calls (none need be compared).
	LosesQueue bool
	// Elect: the election scenarios. The clients are three campaigner
	// processes on one election (Campaign, value: the client id; a
	// leadership's term is the token of its resource applies); a leader
	// acts for at least 2 ttl and then resigns; I10 (one leader at a time)
	// and I11 (terms strictly increase) apply.
	Elect bool
	// Backend: the scenario runs on that lock service only (Mode Etcd or
	// Postgres), not in the Redis modes.
	Backend string
	// Recovery, when set, replaces I7's bound (ttl + backoff) for the
	// scenario.
	Recovery time.Duration
	// Shared: the shared-lock scenarios (single-node Redis): every hold
	// is a grant of a semaphore of limit Limit (client.SharedSemaphore)
	// or of an RW lock (client.SharedRW); five clients; I12 / I13 apply
	// instead of I1.
	Shared string
	Limit  int
	// PGFence is pgfence's mode for the Postgres scenarios (empty:
	// current).
	PGFence string
	// Sentinel: the scenario runs on a Sentinel deployment only
	// (SentinelMode).
	Sentinel bool
}

// EtcdLeaderKillRecovery is I7's bound under a killed etcd leader: a
// request in flight when the leader died (a release, an acquire) is never
// answered by etcd (the proposal died with the leader); the client gives up
// after distlock's release timeout (5 s) or the acquire budget, and the
// lock stays held by the releasing owner's lease until it expires (ttl).
// Measured: up to 4.9 s after the heal with ttl 2 s (docs/SAFETY.md).
const EtcdLeaderKillRecovery = 5*time.Second + EtcdTTL + 500*time.Millisecond

// Mode returns the mode of a backend scenario (Etcd or Postgres) or of the
// Sentinel scenario.
func (s *Scenario) Mode() Mode {
	switch s.Backend {
	case Etcd.Backend:
		return Etcd
	case Postgres.Backend:
		return Postgres
	case ZooKeeper.Backend:
		return ZooKeeper
	}
	if s.Sentinel {
		return SentinelMode
	}
	return Mode{}
}

func always(Mode) bool { return true }
func never(Mode) bool  { return false }

// Scenarios are the lab's fault classes: twelve on one lock, four on its
// waiter queue, one on an election; then three on etcd (18-20) and five on
// PostgreSQL (21-25), two on shared locks (26, 27), a Sentinel failover
// (28) and four on ZooKeeper (29-32).
var Scenarios = []*Scenario{
	{ID: 1, Key: "pause-holder", Title: "client paused (SIGSTOP) past its ttl after acquiring", Single: true, Redlock: true,
		Excludes: always, Teeth: true, Inject: pauseHolder,
		Schedule: "process client c0 SIGSTOPped right after its lease check, for 2-2.5 ttl, then SIGCONT"},
	{ID: 2, Key: "slow-client", Title: "client delayed during acquisition (and renewal)", Single: true, Redlock: true,
		Excludes: always, Inject: delayClient, MinHold: 2,
		Schedule: "a client's grant reply held back 1.2-2 ttl, or the first renewal reply of its next hold 0.8-1.5 ttl, inside the client after the lock service answered; holds last at least 2 ttl"},
	{ID: 3, Key: "node-latency", Title: "latency on node links comparable to the ttl", Single: true, Redlock: true,
		Excludes: always, Inject: nodeLatency,
		Schedule: "0.3-1 ttl latency each way (toxiproxy) on every node link of the holder or of all clients, for 2 ttl"},
	{ID: 4, Key: "slow-write", Title: "delay on the client-to-resource link (the write arrives after expiry)", Single: true, Redlock: true,
		Excludes: always, Teeth: true, Inject: slowWrite,
		Schedule: "2 ttl latency (toxiproxy) on a holder's resource link, added right after its lease check; its write times out at ttl/2, it releases, the write lands later"},
	{ID: 5, Key: "partition-holder", Title: "holder partitioned from a majority (black hole)", Single: true, Redlock: true,
		Excludes: always, Inject: partitionHolder,
		Schedule: "toxiproxy timeout toxic (drop everything) on the holder's links to a majority of nodes, for 2 ttl"},
	{ID: 6, Key: "minority-down", Title: "a minority of nodes down or paused", Redlock: true,
		Excludes: always, Inject: minorityDown,
		Schedule: "node 0's clock set 30 s ahead (its fencing high-water), then node 0 (and maybe one more) SIGSTOPped or its proxies down for 1.5 ttl"},
	{ID: 7, Key: "node-paused", Title: "a node process paused (SIGSTOP, CLIENT PAUSE)", Single: true, Redlock: true,
		Excludes: always, Inject: nodePaused,
		Schedule: "one node SIGSTOPped or CLIENT PAUSE ALL for 0.5-1.5 ttl"},
	{ID: 8, Key: "restart-now", Title: "a node killed and restarted at once without persistence", Single: true, Redlock: true,
		Excludes: never, Teeth: true, Inject: restartNow,
		Schedule: "the node (redlock: a majority, 3 nodes, at the same time) killed and restarted empty while the lock is held"},
	{ID: 9, Key: "restart-delayed", Title: "a node killed, restart delayed beyond the max ttl", Single: true, Redlock: true,
		Excludes: always, Inject: restartDelayed,
		Schedule: "single: the node killed while held, restarted empty 1.5 ttl later; redlock: a majority killed ttl/5 apart, each restarted empty 1.5 ttl after its kill"},
	{ID: 10, Key: "clock-jump", Title: "a node's clock jumps forward (lock key expired early)", Single: true, Redlock: true,
		Excludes: never, Teeth: true, Inject: clockJump,
		Schedule: "PEXPIRE 1 on the lock key while held and the node's fencing high-water moved 5 s ahead; redlock: on a majority"},
	{ID: 11, Key: "conn-reset", Title: "connection reset mid-command", Single: true, Redlock: true,
		Excludes: always, Inject: connReset,
		Schedule: "toxiproxy reset_peer on one random link of one client, upstream (command dropped) or downstream (command ran, reply lost), for ttl/4"},
	{ID: 12, Key: "kill-holder", Title: "holder killed (-9)", Single: true, Redlock: true,
		Excludes: always, Inject: killHolder,
		Schedule: "process client c0 SIGKILLed right after its lease check; a new process takes its place"},
	{ID: 13, Key: "kill-head-waiter", Title: "queue: the head waiter killed (-9), on its reservation", Single: true, Queue: true,
		Excludes: always, Inject: killHeadWaiter,
		Schedule: "a process waiter (c0, c1 or the default-policy c3) found at the head of the queue in Redis while the lock is held; either SIGSTOPped there and SIGKILLed as soon as a release has reserved the lock for it (the lab polls the queue's state every 5 ms), or SIGKILLed at once; a new process takes its place 200-700 ms later, around the lapse of the dead head's reservation (a newcomer then races the hand-over to the next head)"},
	{ID: 14, Key: "stop-head-waiter", Title: "queue: the head waiter paused (SIGSTOP) past its reservation and WaiterTTL", Single: true, Queue: true,
		Excludes: always, Inject: stopHeadWaiter,
		Schedule: "a process waiter found at the head of the queue while the lock is held, SIGSTOPped for WaiterTTL + 0.5-1.5 s (3.5-4.5 s), then SIGCONT"},
	{ID: 15, Key: "kill-waiters", Title: "queue: waiters that are not the head killed (-9)", Single: true, Queue: true,
		Excludes: always, Inject: killWaiters,
		Schedule: "a process waiter found behind the head in the queue SIGKILLed, and the other process waiter too if it is queued behind the head then; new processes ttl/2 later; the dead entries stay until WaiterTTL (3 s), and the next kill waits that long"},
	{ID: 16, Key: "restart-queue", Title: "queue: the lock node restarted empty while several clients wait", Single: true, Queue: true,
		Excludes: never, Inject: restartQueue, LosesQueue: true,
		Schedule: "the node killed and restarted at once without persistence while the lock is held and 2 or more waiters are queued (lock, fence and queue lost); the next restart at least WaiterTTL (3 s) later"},
	{ID: 17, Key: "elect-faults", Title: "election: the leader process paused, killed, cut from Redis, its connections reset", Single: true, Redlock: true, Elect: true,
		Excludes: always, Inject: electFaults,
		Schedule: "three campaigner processes; right after the leader's check before a write, one of (at random): the leader SIGSTOPped for 2-2.5 ttl then SIGCONT (class 1); SIGKILLed, a new process 0.5 ttl later (12); its links to the lock nodes (redlock: a majority) black-holed for 2 ttl (5); reset_peer on its link to one node, either direction, for ttl/4 (11)"},
	{ID: 18, Key: "etcd-pause-holder", Title: "etcd: client paused (SIGSTOP) past its ttl after acquiring", Backend: "etcd",
		Excludes: always, Teeth: true, Inject: pauseHolder,
		Schedule: "three etcd members; process client c0 SIGSTOPped right after its lease check, for 2-2.5 ttl, then SIGCONT"},
	{ID: 19, Key: "etcd-leader-kill", Title: "etcd: the leader killed while the lock is held and waiters wait", Backend: "etcd",
		Excludes: always, Inject: etcdLeaderKill, Recovery: EtcdLeaderKillRecovery,
		Schedule: "right after a holder's lease check, the etcd leader SIGKILLed and restarted on its data dir 0.25-1 ttl later"},
	{ID: 20, Key: "etcd-minority-stop", Title: "etcd: a minority (one member of three) paused", Backend: "etcd",
		Excludes: always, Inject: etcdMinorityStop,
		Schedule: "right after a holder's lease check, one member (the leader half of the time) SIGSTOPped for 1-2 ttl, then SIGCONT"},
	{ID: 21, Key: "pg-pause-holder", Title: "postgres: client paused (SIGSTOP) past its ttl after acquiring", Backend: "postgres",
		Excludes: always, Teeth: true, Inject: pauseHolder,
		Schedule: "process client c0 SIGSTOPped right after its lease check, for 2-2.5 ttl, then SIGCONT; pgfence mode current"},
	{ID: 22, Key: "pg-restart", Title: "postgres: the server killed and restarted while the lock is held", Backend: "postgres",
		Excludes: always, Inject: pgRestart,
		Schedule: "right after a holder's lease check, pg_ctl stop -m immediate, started again 0.2-1 ttl later (the lease table is durable)"},
	{ID: 23, Key: "pg-terminate", Title: "postgres: pg_terminate_backend on a client's connections", Backend: "postgres",
		Excludes: always, Inject: pgTerminate,
		Schedule: "right after a holder's lease check, every connection of the holder (a third of the time: of another client, waiting or polling) terminated"},
	{ID: 24, Key: "pg-proxy-pause", Title: "postgres: a client's link to the database stalled past its ttl", Backend: "postgres",
		Excludes: always, Inject: pgProxyPause,
		Schedule: "right after a holder's lease check, its TCP proxy to PostgreSQL paused for 2-2.5 ttl (the process runs; its renewals and writes hang, and land when the proxy resumes)"},
	{ID: 25, Key: "pg-pause-holder-hs", Title: "postgres: client paused past its ttl, pgfence mode highest-seen", Backend: "postgres", PGFence: "highest-seen",
		Excludes: always, Teeth: true, Inject: pauseHolder,
		Schedule: "as 21, with pgfence's HighestSeen mode (a write by an expired holder is accepted while nobody newer was granted)"},
	{ID: 26, Key: "shared-semaphore", Title: "semaphore (limit 2, weights 1-2) under the existing fault classes", Single: true,
		Shared: "semaphore", Limit: 2, Excludes: never, Inject: sharedFaults,
		Schedule: "five clients on Client.Semaphore(name, 2), weights 1 or 2; one event every 1-2 ttl, at random: the process holder SIGSTOPped 2-2.5 ttl (class 1) or SIGKILLed (12), the node SIGSTOPped or CLIENT PAUSEd (7), a holder black-holed from the node (5), a connection reset (11)"},
	{ID: 27, Key: "shared-rwmutex", Title: "RW lock (a writer one hold in three) under the existing fault classes", Single: true,
		Shared: "rwmutex", Excludes: never, Inject: sharedFaults,
		Schedule: "five clients on Client.RWMutex(name), Lock one hold in three, else RLock; faults as 26"},
	{ID: 29, Key: "zk-pause-holder", Title: "zookeeper: client paused (SIGSTOP) past its ttl and its session timeout after acquiring", Backend: "zookeeper",
		Excludes: always, Teeth: true, Inject: zkPauseHolder,
		Schedule: "three ZooKeeper members, sessions of 2 ttl; process client c0 SIGSTOPped right after its lease check for its session timeout + 0.6-1 ttl (past the session's expiry, which the leader rounds up to its next 500 ms tick; its lease ends, its session expires, another client is granted), then SIGCONT; the resource's fenced copy behind zkfence"},
	{ID: 30, Key: "zk-leader-kill", Title: "zookeeper: the leader killed while the lock is held and waiters wait", Backend: "zookeeper",
		Excludes: always, Inject: zkLeaderKill, Recovery: ZKFailoverRecovery,
		Schedule: "right after a holder's lease check, the ZooKeeper leader (of 3) SIGKILLed and started again on its data 0.25-1 ttl later"},
	{ID: 31, Key: "zk-rolling-restart", Title: "zookeeper: each member restarted in turn while the lock is held and waiters wait", Backend: "zookeeper",
		Excludes: always, Inject: zkRollingRestart, Recovery: ZKFailoverRecovery,
		Schedule: "right after a holder's lease check, each of the 3 members in turn SIGKILLed and started again on its data 0.25-0.5 ttl later, the next once it serves again"},
	{ID: 32, Key: "zk-minority-stop", Title: "zookeeper: a minority (one member of three) paused", Backend: "zookeeper",
		Excludes: always, Inject: zkMinorityStop, Recovery: ZKFailoverRecovery,
		Schedule: "right after a holder's lease check, one member (the leader half of the time) SIGSTOPped for 1-2 ttl (within syncLimit: no election), then SIGCONT"},
	{ID: SentinelFailoverID, Key: "sentinel-failover", Title: "Sentinel: failover to a replica that missed the last grants", Sentinel: true,
		Excludes: never, Inject: sentinelFailover,
		Schedule: "a master, one replica, three sentinels, clients on go-redis failover clients; once per run, while a holder works: the replica SIGSTOPped and its link dropped (CLIENT KILL TYPE replica) until the master made a grant and its holder checked its lease (at most 4 ttl), then the master SIGKILLed, the replica resumed and SENTINEL FAILOVER; the lost grant makes two holders (I1 not claimed), the time floor keeps the token order"},
}

// ScenarioByID returns scenario id, or nil.
func ScenarioByID(id int) *Scenario {
	for _, s := range Scenarios {
		if s.ID == id {
			return s
		}
	}
	return nil
}
