package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/srvproc"
)

const (
	readyTimeout  = 5 * time.Second        // how long a start waits for PONG
	readyInterval = 5 * time.Millisecond   // poll period while waiting
	probeTimeout  = 100 * time.Millisecond // per-probe dial and I/O bound
	stopWait      = 5 * time.Second        // SIGTERM grace before SIGKILL
	restartWindow = 3 * time.Second        // how long Restart retries a busy port
	restartPause  = 50 * time.Millisecond  // back-off between Restart attempts
	startAttempts = 5                      // fresh ports tried by New
)

// Server is a real redis-server process listening on 127.0.0.1 with its own
// temporary directory. All methods are safe for concurrent use; lifecycle
// operations (Stop, Kill, Pause, Resume, Restart, Close) are serialized.
type Server struct {
	bin  string
	cfg  config
	dir  string
	port int
	addr string

	mu      sync.Mutex
	proc    *srvproc.Process // most recently started process; nil only before start
	paused  bool
	closed  bool
	clients []*redis.Client
}

// New starts a redis-server on a free loopback port in a fresh temporary
// directory and waits until it answers PING. If the port is grabbed by
// someone else before redis-server binds it, or no PONG arrives within 5
// seconds, New retries with a new port, up to 5 attempts in all. The caller
// must Close the server. If redis-server is not installed, New returns
// ErrRedisServerNotFound.
func New(opts ...Option) (*Server, error) {
	bin, err := RequireRedisServer()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: create temp dir: %w", err)
	}
	s := &Server{bin: bin, cfg: newConfig(opts), dir: dir}

	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
			continue
		}
		s.port, s.addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p, err := s.launch()
		if err == nil {
			s.proc = p
			return s, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d (port %d): %w", attempt, port, err))
		if errors.Is(err, errExited) && !errors.Is(err, errPortBusy) {
			break // a bad argument or the like: another port will not help
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redistest: could not start redis-server:\n%w", errors.Join(errs...))
}

// launch starts redis-server on s.port and waits for it to answer PING. On
// failure the process is killed and the error carries the lines it logged;
// the error wraps errPortBusy if the port could not be bound. It must be
// called with s.mu held (or before s is shared).
func (s *Server) launch() (*srvproc.Process, error) {
	if err := s.writeSentinelConf(); err != nil {
		return nil, err
	}
	logs := s.logMark()
	logfile := filepath.Join(s.dir, logName)
	p, err := srvproc.Start(s.bin, s.cfg.serverArgs(s.port, s.dir, logfile), filepath.Join(s.dir, outName))
	if err != nil {
		return nil, redisErr(err)
	}
	if err := waitReady(p, s.addr, readyTimeout); err != nil {
		_ = p.Kill()
		tail := logs.tail()
		if strings.Contains(tail, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortBusy, err)
		}
		return nil, fmt.Errorf("%w%s", err, tail)
	}
	return p, nil
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.addr }

// URL returns the server's address as a URL, "redis://127.0.0.1:PORT".
func (s *Server) URL() string { return "redis://" + s.addr }

// Port returns the TCP port the server listens on. It never changes, not even
// across Restart.
func (s *Server) Port() int { return s.port }

// PID returns the process id of the most recently started redis-server
// process. After Stop, Kill or Close it is the id of the process that exited.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Close kills the process (resuming it first in case it is paused), waits
// for it to exit, closes every client handed out by Client and removes the
// temporary directory. It is idempotent: later calls return nil.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true

	var errs []error
	if s.proc != nil {
		if err := s.proc.Kill(); err != nil {
			errs = append(errs, redisErr(err))
		}
	}
	s.paused = false
	for _, c := range s.clients {
		_ = c.Close() // errors only say the caller already closed it
	}
	s.clients = nil
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("redistest: remove %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}

// freePort asks the kernel for a free loopback port. The port is released
// before returning, so a caller must cope with losing a race for it.
func freePort() (int, error) {
	for {
		port, err := srvproc.FreePort()
		if err != nil || port != 6379 { // never the default Redis port
			return port, err
		}
	}
}
