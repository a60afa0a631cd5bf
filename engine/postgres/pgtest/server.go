// Package pgtest runs real PostgreSQL servers for tests: Debian's
// PostgreSQL 15 (apt-get install postgresql), a cluster of its own made by
// initdb in a temporary directory, started with pg_ctl on a free loopback
// port with its socket in that directory and fsync off, and removed at
// the end. As root, initdb and pg_ctl run as the postgres user (initdb
// refuses root). A system cluster the package may have started is never
// used.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is one PostgreSQL server of a test run.
type Server struct {
	Dir  string // the temporary directory: data/, the socket, the log
	Port int
	bin  string
	as   *user.User // the user that runs the server; nil: this process's
}

// startTimeout bounds a start until the server accepts connections.
const startTimeout = 60 * time.Second

// Start makes a new cluster and starts it. Stop it with Stop.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "distlock-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if s.as, err = user.Lookup("postgres"); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
		}
		if err := chown(dir, s.as); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, out)
	}
	for attempt := 1; ; attempt++ {
		if s.Port, err = freePort(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		err := s.Start()
		if err == nil {
			return s, nil
		}
		_ = s.Kill()
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			s.Stop()
			return nil, err
		}
	}
}

// startAttempts bounds Start's ports: a port free when picked may be
// taken by another process before the server binds it.
const startAttempts = 3

// errPortTaken: the server's port was taken by another process (another
// server answered there, or the server could not bind it).
var errPortTaken = errors.New("pgtest: the port was taken by another process")

// Start starts the (stopped) server again on its port, and returns once it
// accepts connections. fsync is off (an OS crash could lose data; a killed
// server cannot), synchronous_commit stays on: a commit is in the WAL
// before the client hears of it, so a killed server keeps every grant.
func (s *Server) Start() error {
	opts := strings.Join([]string{
		"-p", strconv.Itoa(s.Port), "-k", s.Dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB",
	}, " ")
	if out, err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.Dir, "log"), "-o", opts, "-W", "start"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl start: %v: %s", err, out)
	}
	return s.waitReady()
}

// Stop stops the server at once (pg_ctl -m immediate: committed data
// survives, as after a crash) and removes its directory.
func (s *Server) Stop() {
	_ = s.Kill()
	_ = os.RemoveAll(s.Dir)
}

// Kill stops the server at once, keeping its data (Start starts it again).
func (s *Server) Kill() error {
	out, err := s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	if err != nil && !strings.Contains(string(out), "not running") && !strings.Contains(string(out), "No such file") {
		return fmt.Errorf("pgtest: pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// URL returns a connection string for database postgres on the server
// (over TCP on loopback), with extra parameters ("application_name=x").
func (s *Server) URL(params ...string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	for _, p := range params {
		u += "&" + p
	}
	return u
}

// Log returns the server's log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
	return string(b)
}

func (s *Server) data() string { return filepath.Join(s.Dir, "data") }

// waitReady tries to connect until the server answers a query.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var last error
	for {
		if strings.Contains(s.Log(), "Address already in use") {
			return fmt.Errorf("%w: %d", errPortTaken, s.Port)
		}
		conn, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			var dir string
			err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir)
			_ = conn.Close(ctx)
			if err == nil && !s.ours(dir) {
				return fmt.Errorf("%w: %d answered by the server of %s", errPortTaken, s.Port, dir)
			}
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: server on port %d not ready after %v: %v\n%s", s.Port, startTimeout, last, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ours reports whether dir, a server's data directory, is s's.
func (s *Server) ours(dir string) bool {
	if dir == s.data() {
		return true
	}
	a, errA := filepath.EvalSymlinks(dir)
	b, errB := filepath.EvalSymlinks(s.data())
	return errA == nil && errB == nil && a == b
}

// run runs one of the server's programs, as the postgres user when root.
func (s *Server) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, prog)
	var cmd *exec.Cmd
	if s.as != nil {
		cmd = exec.Command("runuser", append([]string{"-u", s.as.Username, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = s.Dir
	return cmd.CombinedOutput()
}

// binDir finds the PostgreSQL programs: the newest /usr/lib/postgresql/N/bin
// (Debian), else the directory of initdb on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgtest: PostgreSQL is not installed (apt-get install -y postgresql)")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func chown(dir string, u *user.User) error {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
