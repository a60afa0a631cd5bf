package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// groupHasLiveMember reports whether a process of the group pgid is alive,
// not counting zombies (which kill(2) still finds, and which nobody may
// reap when the group's processes were orphaned in a container whose init
// does not reap). It reads /proc; when it cannot, it says yes.
func groupHasLiveMember(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return true
	}
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		end := bytes.LastIndexByte(data, ')')
		if end < 0 {
			continue
		}
		f := bytes.Fields(data[end+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if pg, err := strconv.Atoi(string(f[2])); err == nil && pg == pgid {
			return true
		}
	}
	return false
}
