package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/safety/history"
)

// ConfigEnv is the environment variable that carries a process client's
// Config (JSON). A lab binary that finds it set runs ProcessMain instead of
// its own main.
const ConfigEnv = "DISTLOCK_LAB_CLIENT"

// Commands a process client reads on stdin, one per line.
const (
	CmdStop         = "stop"          // finish the current hold and exit
	CmdDelayAcquire = "delay-acquire" // "delay-acquire <ns>"
	CmdDelayExtend  = "delay-extend"  // "delay-extend <ns>"
)

// ProcessMain runs a process client: the Config comes from ConfigEnv,
// history events go to stdout as JSON lines, commands come from stdin (EOF
// means stop). It returns the exit code.
func ProcessMain(stdin io.Reader, stdout io.Writer) int {
	cfg, err := Unmarshal(os.Getenv(ConfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab client: bad config:", err)
		return 2
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	rec := func(e history.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e) // unbuffered: the lab reacts to events as they come
	}
	w, err := NewWorker(cfg, rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab client:", err)
		return 1
	}
	// The process's own scheduling delay: on a loaded machine the lab's
	// clients can be starved while the lab itself is not.
	probe := lagprobe.Start()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case CmdStop:
				return
			case CmdDelayAcquire, CmdDelayExtend:
				var ns int64
				if len(f) == 2 {
					_, _ = fmt.Sscan(f[1], &ns)
				}
				if f[0] == CmdDelayAcquire {
					w.Slow().DelayAcquire(time.Duration(ns))
				} else {
					w.Slow().DelayExtend(time.Duration(ns))
				}
			}
		}
	}()
	w.Run(ctx)
	err = w.Close()
	rec(history.Event{Kind: history.KindClientExit, Client: cfg.ID, At: history.Now(), Lag: int64(probe.Done())})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab client: close:", err)
	}
	return 0
}
