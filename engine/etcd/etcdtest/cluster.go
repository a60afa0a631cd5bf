package etcdtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/internal/srvproc"
)

// Cluster is a set of etcd members on loopback, stopped at the end of the
// test that started it.
type Cluster struct {
	t       TB
	Members []*Member
	group   srvproc.Group // the members' slots
}

// Member is one etcd process. Its Slot (internal/srvproc) keeps the
// process: Running, Kill and Cont are the Slot's.
type Member struct {
	srvproc.Slot
	c       *Cluster
	Name    string
	Client  string // client URL
	peer    string
	dir     string
	initial string // --initial-cluster
}

// Start starts a cluster of n members and waits until every member
// runs and answers and the cluster has a leader. Every process is killed
// when the test ends. A member that exits while the cluster starts (its
// port, free when picked, taken by another process before it bound it)
// makes Start begin again on fresh ports, up to startAttempts times.
func Start(t TB, n int) *Cluster {
	t.Helper()
	return start(t, n, srvproc.FreeAddr)
}

// start is Start, with the members' addresses picked by pick.
func start(t TB, n int, pick func(srvproc.TB) string) *Cluster {
	t.Helper()
	bin := Binary(t)
	var c *Cluster
	srvproc.StartFresh(t, startAttempts, func() srvproc.Group {
		c = launch(t, bin, n, pick)
		c.waitStarted(60 * time.Second)
		return c.group
	})
	return c
}

// startAttempts bounds Start's attempts.
const startAttempts = 3

// launch starts the processes of a cluster of n members on addresses
// picked by pick (free ports).
func launch(t TB, bin string, n int, pick func(srvproc.TB) string) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var peers []string
	for i := range n {
		m := &Member{c: c, Name: fmt.Sprintf("m%d", i), dir: t.TempDir()}
		m.Label, m.Log = "etcd member "+m.Name, filepath.Join(m.dir, "etcd.log")
		m.Client = "http://" + pick(t)
		m.peer = "http://" + pick(t)
		peers = append(peers, m.Name+"="+m.peer)
		c.Members, c.group = append(c.Members, m), append(c.group, &m.Slot)
	}
	t.Cleanup(func() { c.group.Stop(t) })
	for _, m := range c.Members {
		m.initial = strings.Join(peers, ",")
		m.start(bin, "new")
	}
	return c
}

func (m *Member) start(bin, state string) {
	m.c.t.Helper()
	err := m.Start(bin,
		"--name", m.Name,
		"--data-dir", filepath.Join(m.dir, "data"),
		"--listen-client-urls", m.Client,
		"--advertise-client-urls", m.Client,
		"--listen-peer-urls", m.peer,
		"--initial-advertise-peer-urls", m.peer,
		"--initial-cluster", m.initial,
		"--initial-cluster-state", state,
		"--initial-cluster-token", "distlock-test",
		"--unsafe-no-fsync", // tests only: a killed process keeps its writes in the page cache
		"--log-level", "warn",
	)
	if err != nil {
		m.c.t.Fatalf("start etcd %s: %v", m.Name, err)
	}
}

// Endpoints returns the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Client)
	}
	return eps
}

// Client returns a new etcd client of every member, closed when the test
// ends.
func (c *Cluster) Client(t TB) *clientv3.Client {
	t.Helper()
	return c.ClientOf(t, c.Endpoints()...)
}

// ClientOf returns a new etcd client of the given endpoints, closed when
// the test ends.
func (c *Cluster) ClientOf(t TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               nopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// WaitReady waits until every running member answers a status request and
// they agree on a leader (polling; no fixed sleeps).
func (c *Cluster) WaitReady(d time.Duration) {
	c.t.Helper()
	c.waitReady(d, func() bool { return false })
}

// waitStarted is Start's wait: WaitReady, which also returns as soon as a
// member of the new cluster has exited (most likely its port was taken
// between the pick and its bind), so that Start can begin again on fresh
// ports instead of waiting d for a leader that cannot be elected.
func (c *Cluster) waitStarted(d time.Duration) {
	c.t.Helper()
	c.waitReady(d, func() bool {
		for _, m := range c.Members {
			if !m.Running() {
				return true
			}
		}
		return false
	})
}

// waitReady polls until the running members agree on a leader, or until
// giveUp reports true; it fails the test after d.
func (c *Cluster) waitReady(d time.Duration, giveUp func() bool) {
	c.t.Helper()
	cli := c.ClientOf(c.t, c.Endpoints()...)
	end := time.Now().Add(d)
	var last error
	for time.Now().Before(end) {
		if giveUp() {
			return
		}
		if _, err := c.Leader(cli); err == nil {
			return
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.dumpLogs()
	c.t.Fatalf("etcd cluster not ready after %v: %v", d, last)
}

// Leader returns the index of the leader, as every running member sees it.
func (c *Cluster) Leader(cli *clientv3.Client) (int, error) {
	leader := uint64(0)
	ids := map[uint64]int{}
	for i, m := range c.Members {
		if !m.Running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.Client)
		cancel()
		if err != nil {
			return -1, fmt.Errorf("%s: %w", m.Name, err)
		}
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return -1, fmt.Errorf("%s: leader %x (others: %x)", m.Name, st.Leader, leader)
		}
		leader = st.Leader
		ids[st.Header.MemberId] = i
	}
	i, ok := ids[leader]
	if !ok {
		return -1, fmt.Errorf("leader %x is not a running member", leader)
	}
	return i, nil
}

// Stop pauses the member (SIGSTOP) and returns once every thread of its
// process is stopped (Slot.Pause): a leader that ran on for a few
// milliseconds after Stop would commit Raft entries and answer requests
// that a test takes for answers without a quorum.
func (m *Member) Stop() {
	m.c.t.Helper()
	if err := m.Pause(stopWait); err != nil {
		m.c.t.Fatalf("stop etcd %s: %v", m.Name, err)
	}
}

// stopWait is how long Stop waits for a member's threads to stop.
const stopWait = 30 * time.Second

// Restart starts a killed member again on its data dir.
func (m *Member) Restart() {
	m.c.t.Helper()
	m.Kill()
	m.start(Binary(m.c.t), "existing")
}

func (c *Cluster) dumpLogs() { c.group.DumpLogs(c.t) }
