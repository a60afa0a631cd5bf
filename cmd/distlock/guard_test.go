//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledDistlockStopsItsCommand: when distlock run or elect itself is
// killed (SIGKILL, the OOM killer, a crash), it cannot stop its command,
// and the lease, no longer renewed, ends after its ttl: another host may
// then take the lock while the command still runs. The command's process
// group, grandchildren included, must be stopped once distlock is gone.
func TestKilledDistlockStopsItsCommand(t *testing.T) {
	for _, sub := range []string{"run", "elect"} {
		t.Run(sub, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pids")
			script := `sleep 300 & echo "$$ $!" > ` + pidFile + `.tmp && mv ` + pidFile + `.tmp ` + pidFile + `; wait`
			cmd := (cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}).command(sub, "--grace", "300ms", "orphan", "--", "sh", "-c", script)
			// Files, not pipes: an orphan holding a pipe would keep cmd.Wait waiting.
			errFile, err := os.Create(filepath.Join(dir, "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer errFile.Close()
			cmd.Stdout, cmd.Stderr = errFile, errFile
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			children := pids(t, waitFile(t, pidFile, patience))
			t.Cleanup(func() {
				for _, pid := range children {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for {
				var alive []int
				for _, pid := range children {
					if !processGone(pid) {
						alive = append(alive, pid)
					}
				}
				if len(alive) == 0 {
					break
				}
				if time.Now().After(deadline) {
					out, _ := os.ReadFile(errFile.Name())
					t.Fatalf("distlock %s was killed, but its command's processes %v still run 5s later, without the lock\noutput: %s", sub, alive, out)
				}
				time.Sleep(10 * time.Millisecond)
			}
			out, _ := os.ReadFile(errFile.Name())
			if !strings.Contains(string(out), "is gone") {
				t.Errorf("the guard did not say why it stopped the command:\n%s", out)
			}
		})
	}
}
