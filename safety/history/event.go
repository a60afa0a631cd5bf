// Package history is the lab's record of what happened: every client
// operation, every resource apply and every fault window, as JSON lines
// stamped with one monotonic clock shared by every process on the machine.
package history

// Event kinds.
const (
	// KindAcquire is one Acquire call: Invoke, Complete, Result (ok, fail,
	// unknown), and for ok the Token, Owner and local validity Deadline.
	KindAcquire = "acquire"
	// KindValidity is a change of a lease's local validity deadline seen by
	// its holder (a confirmed renewal): from At the lease is valid until
	// Deadline.
	KindValidity = "validity"
	// KindLoss is the moment a lease's loss was signalled to its holder
	// (At), with the deadline the lease had then and the Cause.
	KindLoss = "loss"
	// KindRelease is one Release call of the lease Owner.
	KindRelease = "release"
	// KindChecked marks the holder's last check of its lease before a
	// write (At): the point where pauses and delays hurt every lease lock.
	KindChecked = "checked"
	// KindRead and KindWrite are resource applies: Res says which
	// resource, Result is accepted, rejected or unknown.
	KindRead  = "read"
	KindWrite = "write"
	// KindApplyBegin is recorded just before a read or write (Detail: its
	// kind) is sent, with the Client, Res and Invoke its KindRead or
	// KindWrite will carry (a write's Value and Add too). A begin without
	// that event is an apply whose client died (SIGKILL) before it saw the
	// answer: the checks take it as an apply of unknown outcome, since the
	// resource may have applied it.
	KindApplyBegin = "apply-begin"
	// KindFault is one fault window [Start, End] of Class on Target.
	KindFault = "fault"
	// KindFinal is the final state of a resource, read after the run.
	KindFinal = "final"
	// KindClientStart and KindClientExit mark a client's life (process
	// clients can be killed). A process client's own KindClientExit
	// carries Lag: the worst scheduling delay it measured while it ran.
	KindClientStart = "client-start"
	KindClientExit  = "client-exit"
	// KindWait is the start (Invoke) of a waiting Acquire call of a client
	// with a waiting Policy (the queue scenarios); Deadline is the end of
	// its wait budget. Its KindAcquire has the same Client and Invoke.
	KindWait = "wait"
	// KindQueued is a waiting call's first attempt that the lock authority
	// answered Queued (the call entered the waiter queue under Waiter):
	// Invoke is the attempt's send, At its reply; Detail "head" when it
	// entered at the head. Only clients that see the queue record it.
	KindQueued = "queued"
	// KindLeaderEnd is the end of a leadership (the election scenarios),
	// recorded by the leader when it stopped acting: Invoke is when it was
	// elected (Campaign returned; its KindAcquire has the same Owner), At
	// the moment it stopped acting (its leadership's Done/Context ended, or
	// it resigned, whichever came first), Token its term, Deadline the last
	// local validity deadline it honoured (for the negative control, whose
	// leader acts on for a grace after its loss signal, that deadline plus
	// the grace), Cause why it stopped. A killed leader records none (its
	// KindClientExit says when it stopped).
	KindLeaderEnd = "leader-end"
	// KindServerLag is the lab's server probe's record of one backend
	// server (Target: "node0", "resource", "master", an etcd member's
	// name, "postgres", "zk1", ...) over a window of the run ending at At:
	// Invoke and Complete are the send and the answer of the slowest
	// trivial request it counted there (Redis PING, an etcd serializable
	// read, PostgreSQL SELECT 1, ZooKeeper ruok; a request unanswered
	// after its timeout counts with its timeout), Lag their difference (0:
	// none counted), Detail how many it sent and how many failed. A
	// request is not counted while the server is not known to answer (the
	// first, and every one until an answer after a failure).
	KindServerLag = "server-lag"
	// KindRunStart and KindRunEnd frame a run (At); Detail describes it.
	// The run ends when the clients are told to stop.
	KindRunStart = "run-start"
	KindRunEnd   = "run-end"
)

// Results of operations and applies.
const (
	OK       = "ok"
	Fail     = "fail"
	Unknown  = "unknown"
	Accepted = "accepted"
	Rejected = "rejected"
)

// Resources.
const (
	// Fenced is the resource written through the fence guard.
	Fenced = "fenced"
	// Control is the same resource written without any token check.
	Control = "control"
)

// Event is one line of a history. Times are nanoseconds on
// CLOCK_MONOTONIC (see Now); zero means "not known".
type Event struct {
	Kind   string `json:"kind"`
	Client string `json:"client,omitempty"`
	Name   string `json:"name,omitempty"`
	Owner  string `json:"owner,omitempty"`
	Token  uint64 `json:"token,omitempty"`

	Invoke   int64 `json:"invoke,omitempty"`
	Complete int64 `json:"complete,omitempty"`
	At       int64 `json:"at,omitempty"`
	Deadline int64 `json:"deadline,omitempty"`
	// TTL is the lease's ttl in nanoseconds (acquire).
	TTL int64 `json:"ttl,omitempty"`

	Result string `json:"result,omitempty"`
	Cause  string `json:"cause,omitempty"`
	Err    string `json:"err,omitempty"`

	// Res is Fenced or Control for reads, writes and final states.
	Res string `json:"res,omitempty"`
	// Value is a digest of the resource value read or written
	// ("counter:hash of the set").
	Value string `json:"value,omitempty"`
	// Add is the set element a write adds.
	Add string `json:"add,omitempty"`
	// Counter and Set are a final state.
	Counter int64    `json:"counter,omitempty"`
	Set     []string `json:"set,omitempty"`

	// Class, Target, Start, End and Detail describe a fault window.
	Class  int    `json:"class,omitempty"`
	Target string `json:"target,omitempty"`
	Start  int64  `json:"start,omitempty"`
	End    int64  `json:"end,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Servers are the backend servers a fault stopped, killed, restarted
	// or cut off when its Target does not name them (one server's name
	// as Target needs none): the server probe's answers from them during
	// the fault are not the machine's.
	Servers []string `json:"servers,omitempty"`

	// Policy is the waiting policy of a waiting call (wait, acquire) in
	// the queue scenarios: PolicyFair or PolicyDefault (the role the run
	// gives the client, also under the queue-hidden control).
	Policy string `json:"policy,omitempty"`
	// Waiter is the waiter id of a call in the lock's queue (queued).
	Waiter string `json:"waiter,omitempty"`

	// Weight and Access describe a shared lock's grant (acquire, the
	// shared-lock scenarios): the permits it takes (a semaphore's weight;
	// an RW lock's reader 1), and "read" or "write" for an RW lock.
	Weight int    `json:"weight,omitempty"`
	Access string `json:"access,omitempty"`

	// Lag is the worst scheduling delay (ns) a process client measured
	// while it ran (client-exit): how late its timers and replies could
	// be handled, which the machine's load, not the lock, explains. On a
	// server-lag event, the slowest counted round trip (ns).
	Lag int64 `json:"lag,omitempty"`
}

// Access modes of an RW lock's grant (Event.Access).
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// Waiting policies (Event.Policy).
const (
	// PolicyFair: the call waits with distlock.WithFair (strict FIFO).
	PolicyFair = "fair"
	// PolicyDefault: the call waits with the default policy (only the
	// head is woken, a newcomer may take a free lock first).
	PolicyDefault = "default"
)
