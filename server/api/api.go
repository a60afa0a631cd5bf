// Package api holds the wire types of the distlock server's HTTP/JSON API
// (/v1): the request and response bodies, the error body and its stable
// codes. The server (package server) and the remote engine
// (engine/remote) both use it, so the two cannot drift apart. It has no
// dependencies beyond the standard library.
//
// Durations are integers in milliseconds (fields ending in _ms); fencing
// tokens are JSON numbers (they fit in 53 bits until about the year 2255,
// so JavaScript reads them exactly). docs/API.md documents every endpoint.
package api

import (
	"crypto/sha256"
	"encoding/hex"
)

// HolderID is the holder id the server reports for an owner token
// (LockInfo.HolderID, HolderInfo.HolderID, ErrorDetail.HolderID): a short
// public fingerprint that tells holders apart without giving their token
// away, and lets an owner recognise its own hold.
func HolderID(owner string) string {
	if owner == "" {
		return ""
	}
	h := sha256.Sum256([]byte("distlock holder id\x00" + owner))
	return hex.EncodeToString(h[:6])
}

// Error codes: the stable part of every error answer. Clients switch on
// the code, never on the message.
const (
	// CodeLocked: another owner holds the lock (HTTP 409). The detail
	// carries the holder's time left and, for a waiting request, how long
	// it waited.
	CodeLocked = "locked"
	// CodeNotHeld: the owner does not hold the lock (HTTP 409): it expired,
	// was released, or another owner holds it. Detail.Status says which.
	CodeNotHeld = "not_held"
	// CodeInvalidArgument: bad input; nothing changed (HTTP 400, or 413
	// for a body over the size limit).
	CodeInvalidArgument = "invalid_argument"
	// CodeBackendUnavailable: the lock engine behind the server failed
	// (HTTP 503).
	CodeBackendUnavailable = "backend_unavailable"
	// CodeUnauthorized: no bearer token, or an unknown one (HTTP 401).
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: the token's role may not do this (HTTP 403).
	CodeForbidden = "forbidden"
	// CodeTooManyWaiters: the server's limit of waiting requests, per name
	// or in total, is reached (HTTP 429): retry later.
	CodeTooManyWaiters = "too_many_waiters"
	// CodeShuttingDown: the server is shutting down (HTTP 503); waiting
	// requests are answered with it. Retry on another server.
	CodeShuttingDown = "shutting_down"
	// CodeNotFound: no such endpoint (HTTP 404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: the endpoint exists for other methods (HTTP 405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeNotSupported: the server's engine cannot do this (HTTP 501), for
	// example list on an engine without a listing.
	CodeNotSupported = "not_supported"
	// CodeNoLeader: nobody leads the election (HTTP 404).
	CodeNoLeader = "no_leader"
	// CodeUpgradeRefused: the owner holds the read side of a reader-writer
	// lock and asked for the write side, or the other way round (HTTP 409;
	// engine.ErrUpgrade): release the held side first. Nothing changed.
	CodeUpgradeRefused = "upgrade_refused"
	// CodeFenceExhausted: the name's fencing high-water is at 2^53-1 or
	// above, so no grant can get a greater token (HTTP 409;
	// engine.ErrFenceExhausted). Nothing changed.
	CodeFenceExhausted = "fence_exhausted"
	// CodeNotAtomic: the server's engine cannot grant these locks in one
	// step (HTTP 501; engine.ErrNotAtomic): an engine without sets, or
	// Redis Cluster names in different hash slots. Nothing changed: take
	// the locks one by one, in sorted order.
	CodeNotAtomic = "not_atomic"
	// CodeForeignKey: a key distlock did not write is at the lock's place
	// on the server's backend (HTTP 409; a Redis key of another type, or
	// an etcd value that is no lock's). Nothing changed, and no retry or
	// wait mends it: ErrorDetail.Key names the key; an administrator
	// removes it (force-release of the name).
	CodeForeignKey = "foreign_key"
)

// Lock kinds (AcquireRequest.Kind, LockInfo.Kind) and a reader-writer
// lock's modes (AcquireRequest.Mode, HolderInfo.Mode).
const (
	KindMutex     = "mutex"
	KindSemaphore = "semaphore"
	KindRWLock    = "rwlock"
	ModeRead      = "read"
	ModeWrite     = "write"
)

// Not-held statuses (ErrorDetail.Status of a not_held error, and
// ExtendResult.Status).
const (
	StatusExtended    = "extended"
	StatusMissing     = "missing"       // nobody holds the lock
	StatusHeldByOther = "held_by_other" // another owner holds it
)

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Locked: the holder's time left (-1: no expiry), its id (a
	// fingerprint of its owner token), its owner token (admin role only),
	// and how long the request waited.
	HolderTTLMs *int64 `json:"holder_ttl_ms,omitempty"`
	HolderID    string `json:"holder_id,omitempty"`
	Holder      string `json:"holder,omitempty"`
	WaitedMs    *int64 `json:"waited_ms,omitempty"`
	// RetryMs, when positive, asks the client to try again after this
	// long (locked, too_many_waiters, shutting_down).
	RetryMs int64 `json:"retry_ms,omitempty"`
	// Status details not_held: missing or held_by_other.
	Status string `json:"status,omitempty"`
	// Arg names the bad argument of invalid_argument.
	Arg string `json:"arg,omitempty"`
	// Queued and Head (locked): the request is in the lock's waiter queue,
	// at its head. Reserved (locked): the lock is free but kept for the
	// queue; HolderTTLMs is then the reservation's time left.
	Queued   bool `json:"queued,omitempty"`
	Head     bool `json:"head,omitempty"`
	Reserved bool `json:"reserved,omitempty"`
	// Name (locked, for a set): the lock of the set that refused it.
	Name string `json:"name,omitempty"`
	// Key (foreign_key): the key at the lock's place that distlock did not
	// write.
	Key string `json:"key,omitempty"`
}

// AcquireRequest is the body of POST /v1/locks/{name}/acquire.
type AcquireRequest struct {
	// Owner is the owner token. Empty: the server generates a random one
	// and returns it. The same owner acquiring again re-enters the lock.
	Owner string `json:"owner,omitempty"`
	// TTLMs is the lease's time to live (default 30000; 50 to 86400000).
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// WaitMs is the wait budget: 0 makes one attempt; above 0 the server
	// holds the request open until the lock is granted or the budget ends.
	WaitMs int64 `json:"wait_ms,omitempty"`
	// Metadata is shown by status and the dashboard (at most 4096 bytes).
	Metadata string `json:"metadata,omitempty"`
	// Attempt identifies this acquire call, so that a resent request is
	// not counted twice (engine.AcquireRequest.Attempt). Empty: the server
	// makes one up per request.
	Attempt string `json:"attempt,omitempty"`
	// Waiting says that the caller, when the lock is held, waits for the
	// release on GET /v1/locks/{name}/events (engine.AcquireRequest.Waiting):
	// the release then publishes a wake-up. Implied when WaitMs is above 0.
	Waiting bool `json:"waiting,omitempty"`
	// Waiter enters the lock's waiter queue on the server's engine when the
	// lock is refused (engine.AcquireRequest.Waiter), for a client that
	// waits itself (the remote engine; WaitMs must be 0): it listens on
	// GET /v1/locks/{name}/events?waiter=ID, renews the entry with POST
	// /v1/extend (waiter: true) every WaiterTTLMs/3, and leaves with POST
	// /v1/locks/{name}/leave. The locked answer says whether it is queued
	// and at the head. Ignored by an engine without a queue.
	Waiter string `json:"waiter,omitempty"`
	// WaiterTTLMs is the queue entry's heartbeat ttl (default 3000).
	WaiterTTLMs int64 `json:"waiter_ttl_ms,omitempty"`
	// Fair asks for strict FIFO (distlock.WithFair), for a waiting request
	// (WaitMs above 0, or Waiter): not_supported on an engine without a
	// queue.
	Fair bool `json:"fair,omitempty"`
	// Behind: do not take a free lock ahead of the queue
	// (engine.OrderBehind); NoReserve: never reserve the lock for this
	// waiter (engine.OrderNoReserve), refused with fair or behind.
	Behind    bool `json:"behind,omitempty"`
	NoReserve bool `json:"no_reserve,omitempty"`
	// OneOff: owner is a one-off owner that never re-enters
	// (engine.AcquireRequest.OneOff); with it, attempt is the owner.
	OneOff bool `json:"one_off,omitempty"`
	// Announce: the grant is signalled to the lock's event streams, and
	// so is its release (engine.AcquireRequest.Announce): an election's
	// campaign.
	Announce bool `json:"announce,omitempty"`
	// Kind is the lock's kind: empty or "mutex" for the exclusive lock,
	// "semaphore" or "rwlock" for a shared lock (engine.Sharer;
	// not_supported when the server's engine keeps none). A shared lock
	// ignores Fair, Behind and NoReserve (engine.AcquireRequest.Order) and
	// refuses Announce.
	Kind string `json:"kind,omitempty"`
	// Limit (semaphore) is the number of permits, 1 to 2^30-1, that makes
	// the semaphore when it does not exist. Once it exists its stored limit
	// governs: a request with another Limit is served under the stored one,
	// not refused (POST /v1/locks/{name}/limit changes it; GET
	// /v1/locks/{name} shows it). Weight (semaphore) is the number of
	// permits taken, 1 to the stored limit; 0 or absent means 1.
	Limit  int `json:"limit,omitempty"`
	Weight int `json:"weight,omitempty"`
	// Mode (rwlock) is "read" (the default) or "write".
	Mode string `json:"mode,omitempty"`
}

// MetadataRequest is the body of POST /v1/locks/{name}/metadata: set the
// metadata of a lock the owner holds, in place (an election's Proclaim;
// engine.MetadataSetter). Answered with a MetadataResponse, or not_held
// (its detail's status says missing or held_by_other), or not_supported.
type MetadataRequest struct {
	Owner    string `json:"owner"`
	Metadata string `json:"metadata"`
	// Token, when set, is the fencing token of the grant whose holder sets
	// the metadata (an election's term): when Owner's hold has another
	// token (a newer grant of the same owner: the caller was deposed), the
	// answer is not_held with "held_by_other" and nothing changes
	// (engine.MetadataRequest.Token). Absent or 0: Owner's hold.
	Token uint64 `json:"token,omitempty"`
}

// MetadataResponse answers a metadata change that was made.
type MetadataResponse struct {
	Name     string `json:"name"`
	Metadata string `json:"metadata"`
}

// LeaveRequest is the body of POST /v1/locks/{name}/leave: the waiter
// leaves the lock's queue.
type LeaveRequest struct {
	Waiter string `json:"waiter"`
	// Shared: the waiter is in a shared lock's queue.
	Shared bool `json:"shared,omitempty"`
}

// AcquireResponse answers a granted acquire (HTTP 200).
type AcquireResponse struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Token is the fencing token of the grant.
	Token uint64 `json:"token"`
	// Count is the owner's number of holds (above 1 after re-entry).
	Count    int   `json:"count"`
	TTLMs    int64 `json:"ttl_ms"`
	WaitedMs int64 `json:"waited_ms"`
	// Kind, Weight and Mode echo a shared lock's grant (empty for a mutex):
	// the permits held, and for a reader-writer lock the side.
	Kind   string `json:"kind,omitempty"`
	Weight int    `json:"weight,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// ExtendRequest asks to set the time to live of one held lock: the body of
// POST /v1/locks/{name}/extend (Name from the path), and an item of
// POST /v1/extend.
type ExtendRequest struct {
	Name  string `json:"name,omitempty"`
	Owner string `json:"owner"`
	TTLMs int64  `json:"ttl_ms,omitempty"`
	// Waiter (POST /v1/extend only) makes the item a heartbeat of the
	// waiter Owner in the lock's queue: extended while it is queued,
	// missing when it is not.
	Waiter bool `json:"waiter,omitempty"`
	// Shared: the lock (or the waiter's queue) is a shared lock's, a
	// semaphore or a reader-writer lock (a shared engine.ExtendRequest.Kind).
	Shared bool `json:"shared,omitempty"`
	// Token, when set, is the fencing token of the grant being renewed:
	// when Owner's hold has another token (a newer grant of the same
	// owner), the answer is not_held with "held_by_other" and nothing
	// changes (engine.ExtendRequest.Token). Absent or 0: Owner's hold.
	Token uint64 `json:"token,omitempty"`
}

// ExtendResponse answers POST /v1/locks/{name}/extend (HTTP 200).
type ExtendResponse struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	TTLMs int64  `json:"ttl_ms"`
}

// ExtendBatchRequest is the body of POST /v1/extend: every lock is
// extended in one round trip to the engine.
type ExtendBatchRequest struct {
	Locks []ExtendRequest `json:"locks"`
}

// ExtendBatchResponse answers POST /v1/extend: one result per request, in
// order.
type ExtendBatchResponse struct {
	Results []ExtendResult `json:"results"`
}

// ExtendResult is the outcome of one extension of a batch.
type ExtendResult struct {
	// Status is extended, missing or held_by_other; empty with Error.
	Status string       `json:"status,omitempty"`
	Token  uint64       `json:"token,omitempty"`
	Error  *ErrorDetail `json:"error,omitempty"`
	// Wake (a waiter's heartbeat): the waiter heads the queue of a free
	// lock: it should try now.
	Wake bool `json:"wake,omitempty"`
}

// ReleaseRequest is the body of POST /v1/locks/{name}/release.
type ReleaseRequest struct {
	Owner string `json:"owner"`
	// Kind is the kind of the lock the hold is of (as AcquireRequest.Kind;
	// empty: a mutex, unless Shared).
	Kind string `json:"kind,omitempty"`
	// Shared: drop one hold of the owner's permits of a shared lock (the
	// field before Kind; still read when Kind is empty, and still sent).
	Shared bool `json:"shared,omitempty"`
	// Undo: the release takes back a grant nobody keeps (a reply lost or
	// too late); a shared lock it leaves with no holder and nobody queued
	// forgets its kind and limit where the server's engine honours it
	// (engine.ReleaseRequest.Undo).
	Undo bool `json:"undo,omitempty"`
	// Token, when set, is the fencing token of the grant being released:
	// when Owner's hold has another token (a newer grant of the same
	// owner), the answer is not_held and nothing is dropped
	// (engine.ReleaseRequest.Token). Absent or 0: Owner's hold.
	Token uint64 `json:"token,omitempty"`
	// ReleaseID, when set, identifies the release call: a copy of it with
	// the same id (a client resending a release whose answer was lost)
	// drops no second hold of the owner, and is answered as the release
	// was, with the holds left (engine.OnceReleaser). A server whose engine
	// cannot release the lock's kind once (InfoResponse.ReleaseOnce false,
	// or a shared lock on a PostgreSQL schema before version 20) answers
	// not_supported and drops nothing.
	ReleaseID string `json:"release_id,omitempty"`
}

// ReleaseResponse answers a release that dropped a hold (HTTP 200).
type ReleaseResponse struct {
	Name string `json:"name"`
	// Remaining is the owner's number of holds left (re-entry); 0 means
	// the lock is free.
	Remaining int `json:"remaining"`
}

// FenceRequest is the body of POST /v1/locks/{name}/fence: raise the
// fencing high-water to Token while Owner holds the lock (for a quorum of
// servers).
type FenceRequest struct {
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	// Shared: Owner holds permits of a shared lock (a shared
	// engine.RaiseRequest.Kind).
	Shared bool `json:"shared,omitempty"`
}

// FenceResponse answers POST /v1/locks/{name}/fence.
type FenceResponse struct {
	Raised bool `json:"raised"`
}

// LockInfo is the state of one lock: GET /v1/locks/{name}, and the items
// of a listing.
type LockInfo struct {
	Name string `json:"name"`
	Held bool   `json:"held"`
	// Owner is the holder's owner token: shown to the admin role only (and
	// when the server runs without authentication), because whoever knows
	// it can extend or release the lock.
	Owner string `json:"owner,omitempty"`
	// HolderID is a fingerprint of the owner token, shown to every role:
	// it tells holders apart without giving their token away.
	HolderID string `json:"holder_id,omitempty"`
	Count    int    `json:"count,omitempty"`
	Metadata string `json:"metadata,omitempty"`
	// Traceparent is the W3C trace context a traced client stored with
	// the grant (distlock.TraceMetadata), apart from Metadata.
	Traceparent string `json:"traceparent,omitempty"`
	// Token is the fencing token of the current grant.
	Token uint64 `json:"token,omitempty"`
	// TTLMs is the time left; -1 when the lock never expires.
	TTLMs int64 `json:"ttl_ms,omitempty"`
	// HighWater is the highest fencing token minted for the name.
	HighWater uint64 `json:"high_water"`
	// Waiters is the number of waiters: the live entries of the lock's
	// queue (engine.Info.Waiters), the same count on every engine.
	Waiters int `json:"waiters"`
	// Subscribers counts the subscriptions to the lock's wake-ups the
	// engine can see (engine.Info.Subscribers: observers and waiters; on
	// Redis one per subscribed connection; 0 where the engine cannot see
	// them, as on etcd and PostgreSQL).
	Subscribers int `json:"subscribers,omitempty"`
	// Kind is "semaphore" or "rwlock" for a shared lock, empty for a
	// mutex. A shared lock's holders are in Holders (the fields Owner to
	// TTLMs above stay empty, but Token is the highest holder token); Limit
	// is a semaphore's stored limit, and Mode a held reader-writer lock's
	// side: "read" or "write".
	Kind    string       `json:"kind,omitempty"`
	Limit   int          `json:"limit,omitempty"`
	Mode    string       `json:"mode,omitempty"`
	Holders []HolderInfo `json:"holders,omitempty"`
	// Queue lists the first entries of the lock's waiter queue in arrival
	// order (engine.Info.Queue, at most engine.MaxQueueListed); absent
	// when there are none, or when the engine does not list them (Waiters
	// above 0 then).
	Queue []QueueEntry `json:"queue,omitempty"`
	// Partial is set when the server's engine is made of parts (a Redlock
	// quorum's nodes) and some did not answer in time: the state is then
	// the other parts' (see Partial).
	Partial *Partial `json:"partial,omitempty"`
}

// Partial marks an answer built from the parts of the server's engine (a
// Redlock quorum's nodes) that answered in time: a view of those parts,
// not a proof (a lock held on a majority that includes a silent node may
// be reported free, or not listed).
type Partial struct {
	// Unanswered names the parts that did not answer.
	Unanswered []string `json:"unanswered"`
}

// QueueEntry is one entry of a lock's waiter queue (LockInfo.Queue).
type QueueEntry struct {
	// Waiter is the waiter's id (engine.Waiter.ID), which carries its
	// explicit owner (distlock.WaiterOwner): shown to the admin role only
	// (and when the server runs without authentication), as Owner is.
	Waiter string `json:"waiter,omitempty"`
	// WaiterID is a fingerprint of the waiter's id (as HolderID is of an
	// owner token), shown to every role.
	WaiterID string `json:"waiter_id"`
	// WaitedMs is how long it has been in the queue; 0 where the engine
	// records no arrival time.
	WaitedMs int64 `json:"waited_ms,omitempty"`
}

// HolderInfo is one holder of a shared lock.
type HolderInfo struct {
	// Owner is shown to the admin role only; HolderID to every role (see
	// LockInfo).
	Owner    string `json:"owner,omitempty"`
	HolderID string `json:"holder_id"`
	// Weight is the number of permits held (a reader-writer lock's writer
	// holds all 2^30 of them, a reader 1); Mode, for a reader-writer lock,
	// is "read" or "write".
	Weight   int    `json:"weight"`
	Mode     string `json:"mode,omitempty"`
	Count    int    `json:"count"`
	Token    uint64 `json:"token"`
	TTLMs    int64  `json:"ttl_ms"`
	Metadata string `json:"metadata,omitempty"`
	// Traceparent: as LockInfo's.
	Traceparent string `json:"traceparent,omitempty"`
}

// LimitRequest is the body of POST /v1/locks/{name}/limit: set a
// semaphore's stored limit (creating it when it does not exist). A smaller
// limit evicts no holder.
type LimitRequest struct {
	Limit int `json:"limit"`
}

// LimitResponse answers POST /v1/locks/{name}/limit: the limit now and the
// one before (0 for a new semaphore).
type LimitResponse struct {
	Name     string `json:"name"`
	Limit    int    `json:"limit"`
	Previous int    `json:"previous"`
}

// ListResponse answers GET /v1/locks.
type ListResponse struct {
	Locks []LockInfo `json:"locks"`
	// Next is the cursor of the next page; empty on the last page.
	Next string `json:"next,omitempty"`
	// Partial is set when some parts of the server's engine did not
	// answer in time: the page lists what the others hold.
	Partial *Partial `json:"partial,omitempty"`
}

// ForceReleaseResponse answers DELETE /v1/locks/{name}[?owner=OWNER]:
// Owner is the holder freed, "" when every holder was.
type ForceReleaseResponse struct {
	Name    string `json:"name"`
	Owner   string `json:"owner,omitempty"`
	WasHeld bool   `json:"was_held"`
}

// InfoResponse answers GET /v1/info: what the server runs on and the
// caller's role.
type InfoResponse struct {
	Engine  string `json:"engine"`
	Role    string `json:"role"`
	Auth    bool   `json:"auth"`
	Version string `json:"version"`
	// Embedded: the server runs on the embedded engine, so its locks live
	// in its own memory, die with its process, and no other server shares
	// them.
	Embedded bool `json:"embedded,omitempty"`
	// Backend names the lock state the server answers for: two servers
	// that report the same Backend share their locks, and a client that
	// names both may switch from one to the other. An embedded engine's is
	// "embedded:" and an id of that server process alone; a server on a
	// shared backend reports what its operator declared, or nothing.
	Backend string `json:"backend,omitempty"`
	// MinTTLMs and TTLGranularityMs are the ttls the server's engine can
	// keep (engine.Capabilities): the shortest, and the unit they come in
	// (etcd: 2000 and 1000). The server rounds every ttl up to fit; a Go
	// client (engine/remote) reads them, so that a Client fits its ttls
	// before it asks and its leases report the ttl in effect. 0: no bound.
	MinTTLMs         int64 `json:"min_ttl_ms,omitempty"`
	TTLGranularityMs int64 `json:"ttl_granularity_ms,omitempty"`
	// ReleaseOnce: the server honours ReleaseRequest.ReleaseID (its engine
	// applies a release once: engine.OnceReleaser).
	ReleaseOnce bool `json:"release_once,omitempty"`
}

// Server-sent event names of GET /v1/locks/{name}/events.
const (
	// EventReady: the server subscribed to the lock's releases; a release
	// after it is signalled. Its data is a ReadyEvent.
	EventReady = "ready"
	// EventRelease: the lock was released (or may have been): try again.
	EventRelease = "release"
	// EventLeader (GET /v1/elections/{name}/watch): the election's state,
	// a LeaderInfo; the first one at once, then every change.
	EventLeader = "leader"
)

// ReadyEvent is the data of a lock event stream's "ready" event.
type ReadyEvent struct {
	// HeartbeatMs is how often the server sends a comment line on an idle
	// stream: a client that hears nothing for a few of these takes the
	// stream (and its server: a stopped process keeps its connections
	// open) as dead. Absent from older servers, which sent one every 15 s.
	HeartbeatMs int64 `json:"heartbeat_ms,omitempty"`
}

// CampaignRequest is the body of POST /v1/elections/{name}/campaign: wait
// up to WaitMs to be elected leader with Value. An election is a lock whose
// metadata is the leader's value and whose fencing token is the term; the
// answer is an AcquireResponse (its token is the term), and the leader
// keeps its term with POST /v1/locks/{name}/extend like any holder.
type CampaignRequest struct {
	Value  string `json:"value"`
	Owner  string `json:"owner,omitempty"`
	TTLMs  int64  `json:"ttl_ms,omitempty"`
	WaitMs int64  `json:"wait_ms,omitempty"`
}

// TermRequest is the body of POST /v1/elections/{name}/resign and
// .../proclaim (with Value): the leader's owner and term. A term that is not
// the current one is answered not_held, and nothing changes: the term is
// the grant's token of the engine's one call (engine.MetadataRequest.Token,
// engine.ReleaseRequest.Token), checked in the same step as the write.
type TermRequest struct {
	Owner string `json:"owner"`
	Term  uint64 `json:"term"`
	Value string `json:"value,omitempty"`
}

// LeaderInfo is an election's state: GET /v1/elections/{name} (not_found
// with code no_leader when nobody leads), the watch stream's events, and
// the dashboard's elections.
type LeaderInfo struct {
	Name    string `json:"name"`
	Elected bool   `json:"elected"`
	Value   string `json:"value,omitempty"`
	Term    uint64 `json:"term,omitempty"`
	TTLMs   int64  `json:"ttl_ms,omitempty"`
	// SinceMs is when this server first saw the term (Unix ms; dashboard).
	SinceMs int64 `json:"since_ms,omitempty"`
	// Followers is the number of campaigners waiting (dashboard).
	Followers int `json:"followers"`
}
