package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/distlock/distlock/engine/zookeeper/zktest"
	"github.com/distlock/distlock/safety/client"
)

// ZooKeeper (scenarios 29-32): a three-member ensemble from
// engine/zookeeper/zktest (Debian's zookeeper 3.8 on a JRE, fresh per run),
// clients on engine/zookeeper, both resource copies znodes of the same
// ensemble, the fenced one behind zkfence.

// ZooKeeper is a three-member ensemble (engine/zookeeper), the resource in
// the same ensemble behind zkfence.
var ZooKeeper = Mode{Name: "zookeeper", Nodes: 3, Backend: client.BackendZooKeeper}

// ZKTTL is the ttl of the ZooKeeper runs, and ZKSession the session
// timeout the clients ask for (the ttl may not exceed it; zktest's members
// grant 1 s to 3 min).
const (
	ZKTTL     = time.Second
	ZKSession = 2 * ZKTTL
)

// ZKFailoverRecovery is I7's bound under a killed or restarted member: the
// members left elect a leader (ZooKeeper's election, then the followers'
// sync with it) before anything is written, a client of the killed member
// reconnects to another, and a holder whose renewal could not be answered
// keeps the lock until its ttl; measured below (docs/SAFETY.md).
const ZKFailoverRecovery = 5*time.Second + ZKTTL + 500*time.Millisecond

// startZK starts the run's ensemble, its admin connection and the
// resource's parent and control nodes.
func (w *backendWorld) startZK(spec RunSpec, name string) error {
	if err := tbDo(func() { w.zk = zktest.Start(w.tb, spec.Mode.Nodes) }); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	conn, err := client.NewZKConn(w.zk.Servers(), ZKSession)
	if err != nil {
		return err
	}
	w.zkAdmin = conn
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.ZKSetup(ctx, conn, name, spec.Control == FenceOff)
}

// healZK resumes every member and starts killed ones again on their data.
func (w *backendWorld) healZK(e *env) {
	for _, m := range w.zk.Members {
		if m.Running() {
			m.Cont()
			continue
		}
		if err := tbDo(m.Restart); err != nil {
			e.logf("restart zookeeper %d: %v", m.ID, err)
		}
	}
}

// finalZK reads both copies through the admin connection, trying again
// while the ensemble comes back (a member restarted at the heal).
func (w *backendWorld) finalZK(ctx context.Context, name string) (f, c client.State, err error) {
	for {
		f, c, err = client.ReadFinalZK(ctx, w.zkAdmin, name)
		if err == nil || ctx.Err() != nil {
			return f, c, err
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return f, c, err
		}
	}
}

func (w *backendWorld) closeZK() {
	if w.zkAdmin != nil {
		w.zkAdmin.Close()
	}
}

// zkServing waits until m answers srvr as a leader, follower or standalone
// (a restarted member has joined the quorum), at most d.
func zkServing(m *zktest.Member, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if mode, err := m.Mode(); err == nil && mode != "" {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// zkPauseHolder (29): SIGSTOP the process client c0 right after its lease
// check, past its session timeout (ZKSession + 0.6-1 ttl, beyond the
// session's expiry, which the leader rounds up to its next tick, 500 ms in
// zktest): its lease ends, its session expires (its nodes deleted),
// another client takes the lock; then SIGCONT, and it sends the write its
// check allowed.
func zkPauseHolder(ctx context.Context, e *env) {
	pauseHolderFor(ctx, e, ZKSession+3*e.spec.TTL/5, ZKSession+e.spec.TTL)
}

// zkLeaderKill (30): SIGKILL the ensemble's leader right after a holder's
// lease check (the lock held, waiters waiting), start it again on its data
// 0.25-1 ttl later; the fault ends once it serves again.
func zkLeaderKill(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	m := e.be.zk.Leader()
	if m == nil {
		return
	}
	e.zkRestart(30, m, "leader ", e.between(e.spec.TTL/4, e.spec.TTL))
}

// zkRestart SIGKILLs member m, starts it again on its data d later and
// waits until it serves again (at most a minute), so that the next fault
// never finds a majority down; the fault window ends then. It reports
// whether the member serves.
func (e *env) zkRestart(class int, m *zktest.Member, what string, d time.Duration) bool {
	start := time.Now()
	m.Kill()
	time.Sleep(d)
	if err := tbDo(m.Restart); err != nil {
		e.logf("restart zookeeper %d: %v", m.ID, err)
		return false
	}
	serving := zkServing(m, time.Minute)
	e.fault(class, fmt.Sprintf("zk%d", m.ID), fmt.Sprintf("%szk%d SIGKILLed, started again %v later, serving %v after the kill (%v)",
		what, m.ID, d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), serving), start, time.Now())
	return serving
}

// zkRollingRestart (31): right after a holder's lease check, each member
// in turn SIGKILLed and started again on its data 0.25-0.5 ttl later; the
// next one only once it serves again (at most a minute), so a majority
// always runs, and none once the faults' time is over. One fault window
// per member.
func zkRollingRestart(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	for _, m := range e.be.zk.Members {
		if ctx.Err() != nil || !e.zkRestart(31, m, "", e.between(e.spec.TTL/4, e.spec.TTL/2)) {
			return
		}
	}
}

// zkMinorityStop (32): right after a holder's lease check, one member of
// three (the leader half of the time) SIGSTOPped for 1-2 ttl, then SIGCONT:
// within ZooKeeper's syncLimit (5 s in zktest), so no election; a stopped
// leader stalls every write until it resumes, a stopped follower its own
// clients until they reconnect elsewhere.
func zkMinorityStop(ctx context.Context, e *env) {
	if _, ok := e.waitChecked(ctx, anyClient); !ok {
		return
	}
	ms := e.be.zk.Members
	m, what := ms[e.rng.IntN(len(ms))], "follower"
	if l := e.be.zk.Leader(); l != nil && (e.rng.IntN(2) == 0 || l == m) {
		m, what = l, "leader"
	}
	d := e.between(e.spec.TTL, 2*e.spec.TTL)
	start := time.Now()
	m.Stop()
	time.Sleep(d)
	m.Cont()
	e.fault(32, fmt.Sprintf("zk%d", m.ID), fmt.Sprintf("%s zk%d SIGSTOPped %v", what, m.ID, d.Round(time.Millisecond)), start, time.Now())
}
