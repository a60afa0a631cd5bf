package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// machine describes where and with what a harness run measured.
type machine struct {
	cpus       int
	cpuModel   string
	hypervisor bool
	gomaxprocs int
	goVersion  string
	redis      string
	modules    map[string]string // module path -> version
	commit     string
}

func describeMachine(ctx context.Context, e *env) machine {
	m := machine{gomaxprocs: runtime.GOMAXPROCS(0), goVersion: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		redis: e.single.version(ctx), modules: map[string]string{}}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case k == "processor":
				m.cpus++
			case k == "model name" && m.cpuModel == "":
				m.cpuModel = v
			case k == "flags" && strings.Contains(" "+v+" ", " hypervisor "):
				m.hypervisor = true
			}
		}
		f.Close()
	}
	if m.cpus == 0 {
		m.cpus = runtime.NumCPU()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = "local " + d.Replace.Path
			}
			m.modules[d.Path] = v
		}
	}
	m.commit = gitHead("..")
	return m
}

// gitHead reads the commit checked out in the repository at dir by reading
// .git files (no git command runs). It returns "" when it cannot tell.
func gitHead(dir string) string {
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil {
		return ""
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !isRef {
		return short(ref)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", ref)); err == nil {
		return short(strings.TrimSpace(string(b)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".git", "packed-refs")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if sha, name, ok := strings.Cut(l, " "); ok && name == ref {
				return short(sha)
			}
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// loadAvg returns the 1, 5 and 15-minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// header renders the machine, versions and command as Markdown.
func (m machine) header(date, command, pinning, loadStart, loadEnd string, cfg config) string {
	var b strings.Builder
	hv := ""
	if m.hypervisor {
		hv = ", a virtual machine (hypervisor flag)"
	}
	mod := func(p string) string {
		if v, ok := m.modules[p]; ok {
			return v
		}
		return "?"
	}
	commit := m.commit
	if commit == "" {
		commit = "?"
	}
	fmt.Fprintf(&b, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| date | %s |\n", date)
	fmt.Fprintf(&b, "| CPUs | %d%s; %s |\n", m.cpus, hv, m.cpuModel)
	fmt.Fprintf(&b, "| pinning | %s; harness GOMAXPROCS=%d |\n", pinning, m.gomaxprocs)
	fmt.Fprintf(&b, "| load average (1/5/15 min) | %s at the start, %s at the end |\n", loadStart, loadEnd)
	fmt.Fprintf(&b, "| Go | %s |\n", m.goVersion)
	fmt.Fprintf(&b, "| redis-server | %s, loopback, no persistence |\n", m.redis)
	fmt.Fprintf(&b, "| distlock | this tree (commit %s) |\n", commit)
	fmt.Fprintf(&b, "| peers | go-redsync/redsync/v4 %s, bsm/redislock %s, redis/rueidis (rueidislock) %s |\n",
		mod("github.com/go-redsync/redsync/v4"), mod("github.com/bsm/redislock"), mod("github.com/redis/rueidis"))
	fmt.Fprintf(&b, "| go-redis | %s |\n", mod("github.com/redis/go-redis/v9"))
	fmt.Fprintf(&b, "| command | `%s` |\n", command)
	fmt.Fprintf(&b, "| runs | %d per cell, interleaved run by run (A B C A B C ...); warm-up %v before each window |\n",
		cfg.runs, cfg.warmup)
	fmt.Fprintf(&b, "| windows | S1, S2, S4, S5 %v; S3 %v; S6 %v; S7 %v without a release, then %d hand-offs |\n",
		cfg.cell, cfg.contend, cfg.hold, cfg.waitWindow, cfg.handoffs)
	return b.String()
}
