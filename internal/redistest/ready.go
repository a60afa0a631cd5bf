package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/internal/srvproc"
)

// errExited means the process exited before it answered PING.
var errExited = errors.New("redis-server exited before answering PING")

// waitReady polls addr every readyInterval until the redis-server with the
// given pid answers PING with PONG (which, unlike most replies, it only does
// once any AOF has been loaded), p exits, or timeout elapses.
func waitReady(p *srvproc.Process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p.Exited() {
			return errExited
		}
		pid, err := probe(addr)
		if err == nil {
			if pid == p.Pid() {
				return nil
			}
			// Someone else owns the port; our process will fail to bind.
			last = fmt.Errorf("port answered by another redis-server (pid %d)", pid)
		} else {
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %v: %w", addr, timeout, last)
		}
		time.Sleep(readyInterval)
	}
}

// probe opens a short-lived connection to addr, sends PING and, if it gets
// PONG, INFO server, and returns the answering server's process_id.
func probe(addr string) (pid int, err error) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(2 * probeTimeout)); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)

	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return 0, err
	}
	line, err := readLine(r)
	if err != nil {
		return 0, err
	}
	if line != "+PONG" {
		return 0, fmt.Errorf("PING replied %q", line)
	}

	if _, err := io.WriteString(conn, "INFO server\r\n"); err != nil {
		return 0, err
	}
	head, err := readLine(r)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO replied %q", head)
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("INFO replied %q", head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// readLine reads one RESP line without its CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
