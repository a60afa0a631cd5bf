// Package procstop tells when a SIGSTOP has taken effect on every thread
// of a process, for the test harnesses that pause servers (redistest,
// etcdtest, zktest). kill(2) returns as soon as the signal is queued, and
// the kernel wakes one thread to take it: on a busy machine the process's
// other threads go on running until that one is scheduled (milliseconds,
// sometimes tens), answering requests after the harness's Pause or Stop
// would otherwise have returned.
package procstop

import (
	"fmt"
	"time"
)

// Wait returns once every thread of process pid is stopped (or the
// process is gone), or an error after timeout naming the threads still
// running. Where the threads' states cannot be read (not Linux), it
// returns at once.
func Wait(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, running, err := Stopped(pid)
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("process %d: threads still running %v after SIGSTOP:%s", pid, timeout, running)
		}
		time.Sleep(time.Millisecond) // a poll of /proc: the kernel has no wait for another process's stop
	}
}
