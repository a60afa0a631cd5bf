// Package zktest runs ZooKeeper for tests: Debian's zookeeper package (3.8)
// started with java, one process per member, each in the foreground on free
// loopback ports with a data directory of its own, stopped by pid when the
// test (or TestMain) that started it ends. It never uses a system service.
package zktest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/srvproc"
)

// Jar is the server jar of Debian's zookeeper package; its manifest names
// the jars it needs.
const Jar = "/usr/share/java/zookeeper.jar"

// logJars bind the server's logging to log4j 1.2, configured by the
// log4j.properties the harness writes (warnings only, to the member's log).
var logJars = []string{"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"}

// TB is the part of testing.TB the harness uses; Outside provides one
// outside a test.
type TB = srvproc.TB

// Ensemble is a set of ZooKeeper members on loopback.
type Ensemble struct {
	t       TB
	Members []*Member
	group   srvproc.Group // the members' slots
}

// Member is one ZooKeeper server process. Its Slot (internal/srvproc)
// keeps the process: Running, Kill and Cont are the Slot's.
type Member struct {
	srvproc.Slot
	e    *Ensemble
	ID   int
	Addr string // client address, host:port
	dir  string
}

// Start starts an ensemble of n members (1: standalone) and waits until
// every member runs and serves (a standalone server, or a follower or
// leader of a quorum). Every process is killed when t ends. It fails t when Java or
// the zookeeper package is missing.
func Start(t TB, n int) *Ensemble {
	t.Helper()
	if _, err := os.Stat(Jar); err != nil {
		t.Fatalf("zktest: %v (apt-get install zookeeper)", err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("zktest: %v (the zookeeper package needs a JRE)", err)
	}
	var e *Ensemble
	srvproc.StartFresh(t, startAttempts, func() srvproc.Group {
		e = launch(t, n)
		e.WaitReady(90 * time.Second)
		return e.group
	})
	return e
}

// startAttempts bounds Start's attempts: a member that exits while the
// ensemble starts (a port, free when picked, taken by another process
// before the member bound it) makes Start begin again on fresh ports.
const startAttempts = 3

// launch starts the processes of an ensemble of n members on free ports.
func launch(t TB, n int) *Ensemble {
	t.Helper()
	e := &Ensemble{t: t}
	var servers []string
	for i := 1; i <= n; i++ {
		m := &Member{e: e, ID: i, dir: t.TempDir(), Addr: srvproc.FreeAddr(t)}
		m.Label, m.Log = fmt.Sprintf("zookeeper member %d", i), filepath.Join(m.dir, "zookeeper.log")
		e.Members, e.group = append(e.Members, m), append(e.group, &m.Slot)
		servers = append(servers, fmt.Sprintf("server.%d=%s:%s", i, srvproc.FreeAddr(t), port(srvproc.FreeAddr(t))))
	}
	t.Cleanup(func() { e.group.Stop(t) })
	for _, m := range e.Members {
		m.configure(n, servers)
		m.start()
	}
	return e
}

func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// configure writes the member's zoo.cfg, myid and log4j.properties. Ticks
// of 500 ms let sessions be as short as 1 s; sessions up to 3 min are
// granted as asked (up to 3 min). forceSync=no: tests only, a killed process keeps its
// writes in the page cache.
func (m *Member) configure(n int, servers []string) {
	t := m.e.t
	data := filepath.Join(m.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := []string{
		"tickTime=500", "initLimit=20", "syncLimit=10",
		"dataDir=" + data,
		"clientPort=" + port(m.Addr), "clientPortAddress=127.0.0.1",
		"minSessionTimeout=1000", "maxSessionTimeout=180000",
		"forceSync=no", "admin.enableServer=false",
		"4lw.commands.whitelist=srvr,ruok",
		"maxClientCnxns=0",
	}
	if n > 1 {
		cfg = append(cfg, servers...)
	}
	files := map[string]string{
		"zoo.cfg":          strings.Join(cfg, "\n") + "\n",
		"data/myid":        strconv.Itoa(m.ID) + "\n",
		"log4j.properties": "log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\nlog4j.appender.CONSOLE.layout.ConversionPattern=%d %-5p %m%n\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(m.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// start runs the member's JVM in the foreground of its own process group.
func (m *Member) start() {
	t := m.e.t
	t.Helper()
	cp := strings.Join(append([]string{m.dir, Jar}, logJars...), ":")
	err := m.Start("java",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-cp", cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(m.dir, "zoo.cfg"))
	if err != nil {
		t.Fatalf("start zookeeper %d: %v", m.ID, err)
	}
}

// Servers returns the client addresses of every member.
func (e *Ensemble) Servers() []string {
	var s []string
	for _, m := range e.Members {
		s = append(s, m.Addr)
	}
	return s
}

// WaitReady waits until every running member serves clients (polling
// with the srvr command; no fixed sleeps).
func (e *Ensemble) WaitReady(d time.Duration) {
	e.t.Helper()
	end := time.Now().Add(d)
	var last error
	for time.Now().Before(end) {
		last = nil
		for _, m := range e.Members {
			if !m.Running() {
				continue
			}
			if _, err := m.Mode(); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.dumpLogs()
	e.t.Fatalf("zookeeper not ready after %v: %v", d, last)
}

// Mode asks the member for its mode ("standalone", "leader", "follower")
// with the srvr command; an error when it does not serve.
func (m *Member) Mode() (string, error) {
	c, err := net.DialTimeout("tcp", m.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return mode, nil
		}
	}
	return "", fmt.Errorf("member %d (%s): not serving", m.ID, m.Addr)
}

// Leader returns the member that leads the quorum (the only member of a
// standalone server), or nil when none is known.
func (e *Ensemble) Leader() *Member {
	for _, m := range e.Members {
		if !m.Running() {
			continue
		}
		if mode, err := m.Mode(); err == nil && (mode == "leader" || mode == "standalone") {
			return m
		}
	}
	return nil
}

// Stop pauses the member (SIGSTOP) and returns once every thread of its
// JVM is stopped (Slot.Pause: kill returns when the signal is queued, and
// the other threads run on until one takes it).
func (m *Member) Stop() {
	m.e.t.Helper()
	if err := m.Pause(30 * time.Second); err != nil {
		m.e.t.Fatalf("zktest: stop member %d: %v", m.ID, err)
	}
}

// Restart starts a killed member again on its data directory.
func (m *Member) Restart() {
	m.e.t.Helper()
	m.Kill()
	m.start()
}

func (e *Ensemble) dumpLogs() { e.group.DumpLogs(e.t) }
