package lab

import "context"

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
}

func always(Mode) bool { return true }
func never(Mode) bool  { return false }

// Scenarios are the lab's fault classes: twelve on one lock, four on its
// waiter queue, one on an election.
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
