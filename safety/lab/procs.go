package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/distlock/distlock/internal/procstop"
	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// proc is a client running as a separate process: the lab's own binary
// started again with client.ConfigEnv set (see client.ProcessMain). Its
// history lines arrive on its stdout and go to the recorder as they come.
type proc struct {
	id     string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	done   chan struct{}
	stderr *tailBuffer
}

// startProc starts exe (argv) as client cfg.
func startProc(exe []string, cfg client.Config, rec *history.Recorder) (*proc, error) {
	cmd := exec.Command(exe[0], exe[1:]...)
	cmd.Env = append(os.Environ(), client.ConfigEnv+"="+cfg.Marshal())
	// Killed with the lab, never orphaned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{id: cfg.ID, cmd: cmd, stdin: stdin, done: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start client %s: %w", cfg.ID, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var e history.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err == nil {
				rec.Add(e)
			}
		}
	}()
	go func() {
		<-read // all output first, then Wait (it closes the pipe)
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// send writes one command line; errors mean the process is gone.
func (p *proc) send(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.stdin, line+"\n")
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
}

// pauseTimeout bounds how long pause waits for every thread to stop.
const pauseTimeout = 10 * time.Second

// pause SIGSTOPs the process and returns once every thread of it is
// stopped (procstop.Wait): kill(2) returns as soon as the signal is
// queued, and on a busy machine the process's threads go on running
// (renewing, writing) for milliseconds, sometimes tens, until one of them
// is scheduled to take it. The error (a thread still running after
// pauseTimeout) is for the log: the process is stopping all the same.
func (p *proc) pause() error {
	p.signal(syscall.SIGSTOP)
	return procstop.Wait(p.cmd.Process.Pid, pauseTimeout)
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill kills the process (SIGCONT first, in case it is stopped) and waits.
func (p *proc) kill() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGKILL)
	<-p.done
}

// killNow SIGKILLs the process, stopped or not (SIGKILL needs no SIGCONT,
// so a stopped process never runs again), and waits.
func (p *proc) killNow() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to finish its hold and exit, and kills it after
// grace.
func (p *proc) stop(grace time.Duration) {
	p.signal(syscall.SIGCONT)
	p.send(client.CmdStop)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
