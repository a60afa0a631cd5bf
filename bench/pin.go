package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinTree pins the process root, its threads and all its descendants (and
// their threads) to cpu, as bench/run pins the redis-servers: the etcd
// members and PostgreSQL are started by the harness, which bench/run pins
// to the other CPU, and would otherwise inherit the harness's CPU.
func pinTree(root, cpu int) error {
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	var set unix.CPUSet
	set.Set(cpu)
	var first error
	var walk func(pid int)
	walk = func(pid int) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err == nil {
			for _, t := range tasks {
				if tid, err := strconv.Atoi(t.Name()); err == nil {
					if err := unix.SchedSetaffinity(tid, &set); err != nil && first == nil {
						first = err
					}
				}
			}
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(root)
	return first
}

// postmasterPID reads the postmaster's pid from a data directory.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// childPIDs returns the pids of this process's children.
func childPIDs() []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(string(b[i+1:])); len(f) >= 2 && f[1] == strconv.Itoa(self) {
			out = append(out, pid)
		}
	}
	return out
}
