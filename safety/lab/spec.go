// Package lab is distlock's safety lab: it starts real redis-server
// processes on loopback, puts a TCP fault proxy on every (client, node)
// link, runs clients as goroutines and as processes, injects one class of
// fault at a time on a seeded schedule, records a history and checks it
// (package check).
package lab

import (
	"fmt"
	"time"
)

// Mode is a lock deployment.
type Mode struct {
	Name    string
	Redlock bool
	Nodes   int
	// Backend is the lock service when not Redis (client.BackendEtcd,
	// client.BackendPostgres); Nodes is then the number of etcd members.
	Backend string
	// Sentinel: one Redis deployment managed by Sentinel (a master, a
	// replica, three sentinels), reached through failover clients.
	Sentinel bool
}

// The two modes.
var (
	Single  = Mode{Name: "single", Nodes: 1}
	Redlock = Mode{Name: "redlock", Redlock: true, Nodes: 5}
	// Etcd is a three-member etcd cluster (engine/etcd), the resource in
	// the same cluster behind etcdfence.
	Etcd = Mode{Name: "etcd", Nodes: 3, Backend: "etcd"}
	// Postgres is one PostgreSQL 15 server (engine/postgres), the resource
	// in the same database behind pgfence.
	Postgres = Mode{Name: "postgres", Nodes: 1, Backend: "postgres"}
	// SentinelMode is a master, one replica and three sentinels; the
	// clients use go-redis failover clients.
	SentinelMode = Mode{Name: "sentinel", Nodes: 1, Sentinel: true}
)

// EtcdTTL is the ttl of the etcd runs: etcd leases are whole seconds and
// at least 2 s with etcd's default election timeout (engine/etcd.MinTTL);
// distlock would round a shorter ttl up to it.
const EtcdTTL = 2 * time.Second

// Control names a negative control: a switch that breaks one rule on
// purpose, so that the lab must detect a violation.
type Control string

// The negative controls.
const (
	// NoControl is the real library.
	NoControl Control = ""
	// NoValidity: grants are trusted however late they arrive (quorum
	// validity check off, and a client that skips its own).
	NoValidity Control = "validity-check-off"
	// NoFencing: quorum phase 2 (raising the fencing high-water on a
	// majority) is skipped.
	NoFencing Control = "phase2-fencing-off"
	// FromReply: renewal validity is measured from the reply.
	FromReply Control = "renew-from-reply"
	// NoQueue: the queue scenarios' clients, without WithFair and with the
	// waiter queue hidden from their Clients (the engine wrapper embeds
	// engine.Engine only): they wait by subscription, and every release
	// lets them race.
	NoQueue Control = "queue-hidden"
	// IgnoreLoss: the election scenario's leaders ignore their
	// leadership's loss signal (Done/Context) and keep acting for one more
	// ttl after it (client.ImplIgnoreLoss).
	IgnoreLoss Control = "leader-ignores-loss"
	// Split: the shared-lock scenarios' clients each lock a name of their
	// own (client.Config.Split), a lock that does not share its state.
	Split Control = "permits-not-shared"
	// NoTimeFloor: the Redis engines are built WithoutTimeFloor (tokens
	// count up from a high-water that a failover brings back stale).
	NoTimeFloor Control = "time-floor-off"
	// FenceOff: the fenced copy without its fence (I5; controls.go).
	FenceOff Control = "fence-off"
	// LateLoss: the lease's loss told 250 ms late (I6; controls.go).
	LateLoss Control = "loss-signal-late"
	// HealLate: the lock node back 4 ttl after the recorded heal (I7;
	// controls.go).
	HealLate Control = "heal-recorded-early"
	// LongPause: the lock node paused past I9's bound while clients wait
	// (I9; controls.go).
	LongPause Control = "node-paused-past-bound"
	// ClockBack: the election's node 30 s ahead, then restarted empty
	// (I11; controls.go).
	ClockBack Control = "election-clock-back"
)

// Expect returns what the control must show.
func (c Control) Expect() string {
	switch c {
	case NoValidity, FromReply:
		return "I1 overlapping windows"
	case NoFencing:
		return "I3 token inversions"
	case NoQueue:
		return "I8 fair-order violations"
	case IgnoreLoss:
		return "I10 overlapping leaderships"
	case Split:
		return "I12 over the limit / I13 a writer with others"
	case NoTimeFloor:
		return "a superseded holder's write accepted (and I3 token inversions)"
	}
	return controlExpect(c)
}

// RunSpec is one run: a scenario in a mode, possibly under a negative
// control.
type RunSpec struct {
	Scenario *Scenario
	Mode     Mode
	Control  Control
	TTL      time.Duration
	Duration time.Duration
	Seed     uint64
}

// Key names the run (and its files).
func (s RunSpec) Key() string {
	k := fmt.Sprintf("s%02d-%s-%s", s.Scenario.ID, s.Scenario.Key, s.Mode.Name)
	if s.Control != NoControl {
		k += "-nc-" + string(s.Control)
	}
	return k
}
