package etcdtest

import (
	"context"
	"fmt"
	"github.com/distlock/distlock/internal/procstop"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cluster is a set of etcd members on loopback, stopped at the end of the
// test that started it.
type Cluster struct {
	t       TB
	Members []*Member
}

// Member is one etcd process.
type Member struct {
	c       *Cluster
	Name    string
	Client  string // client URL
	peer    string
	dir     string
	initial string // --initial-cluster

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a cluster of n members and waits until every member
// runs and answers and the cluster has a leader. Every process is killed
// when the test ends. A member that exits while the cluster starts (its
// port, free when picked, taken by another process before it bound it)
// makes Start begin again on fresh ports, up to startAttempts times.
func Start(t TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	for attempt := 1; ; attempt++ {
		c := launch(t, bin, n)
		c.WaitReady(60 * time.Second)
		dead := c.exited()
		if dead == "" {
			return c
		}
		if attempt == startAttempts {
			c.dumpLogs()
			t.Fatalf("etcd member %s exited while the cluster started, %d times", dead, attempt)
		}
		t.Logf("etcd member %s exited while the cluster started (a port taken meanwhile?): starting again", dead)
		c.stop()
	}
}

// startAttempts bounds Start's attempts.
const startAttempts = 3

// launch starts the processes of a cluster of n members on free ports.
func launch(t TB, bin string, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var peers []string
	for i := range n {
		m := &Member{c: c, Name: fmt.Sprintf("m%d", i), dir: t.TempDir()}
		m.Client = "http://" + freeAddr(t)
		m.peer = "http://" + freeAddr(t)
		peers = append(peers, m.Name+"="+m.peer)
		c.Members = append(c.Members, m)
	}
	t.Cleanup(c.stop)
	for _, m := range c.Members {
		m.initial = strings.Join(peers, ",")
		m.start(bin, "new")
	}
	return c
}

// exited returns the name of a member whose process has exited ("": none).
func (c *Cluster) exited() string {
	for _, m := range c.Members {
		if !m.Running() {
			return m.Name
		}
	}
	return ""
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (m *Member) start(bin, state string) {
	m.c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(m.dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		m.c.t.Fatal(err)
	}
	cmd := exec.Command(bin,
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
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procstop.Attr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		m.c.t.Fatalf("start etcd %s: %v", m.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
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
	cli := c.ClientOf(c.t, c.Endpoints()...)
	end := time.Now().Add(d)
	var last error
	for time.Now().Before(end) {
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

// Running reports whether the member's process runs (stopped or not).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Kill kills the member (SIGKILL) and waits for it to exit.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-done
}

// Stop pauses the member (SIGSTOP) and returns once every thread of its
// process is stopped. kill(2) returns as soon as the signal is queued, and
// the kernel wakes one thread to take it: on a busy machine the others go
// on running until that one is scheduled (milliseconds, sometimes tens),
// answering requests and committing Raft entries after Stop would
// otherwise have returned.
func (m *Member) Stop() {
	m.c.t.Helper()
	m.signal(syscall.SIGSTOP)
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	if err := procstop.Wait(cmd.Process.Pid, stopWait); err != nil {
		m.c.t.Fatalf("stop etcd %s: %v", m.Name, err)
	}
}

// stopWait is how long Stop waits for a member's threads to stop.
const stopWait = 30 * time.Second

// Cont resumes a paused member (SIGCONT).
func (m *Member) Cont() { m.signal(syscall.SIGCONT) }

func (m *Member) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = syscall.Kill(m.cmd.Process.Pid, sig)
	}
}

// Restart starts a killed member again on its data dir.
func (m *Member) Restart() {
	m.c.t.Helper()
	m.Kill()
	m.start(Binary(m.c.t), "existing")
}

func (c *Cluster) stop() {
	for _, m := range c.Members {
		m.Kill()
	}
	if c.t.Failed() {
		c.dumpLogs()
	}
}

func (c *Cluster) dumpLogs() {
	for _, m := range c.Members {
		b, _ := os.ReadFile(filepath.Join(m.dir, "etcd.log"))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		c.t.Logf("etcd %s log (tail):\n%s", m.Name, b)
	}
}
