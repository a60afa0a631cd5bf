package procstop

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Stopped reports whether every thread of process pid is stopped (state T
// in /proc), or has exited; running names the threads that are not, for a
// message.
func Stopped(pid int) (ok bool, running string, err error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return false, "", err
	}
	if len(stats) == 0 {
		return true, "", nil // the process is gone
	}
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold ") ".
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return false, "", fmt.Errorf("%s: unexpected %q", s, b)
		}
		switch b[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			running += fmt.Sprintf(" %s:%c", filepath.Base(filepath.Dir(s)), b[i+2])
		}
	}
	return running == "", running, nil
}
