package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock"
)

// releaseAttachTTL is the ttl distlock release extends the lock to while it
// proves ownership (Attach extends), so that a release that then fails
// leaves the lock held only briefly.
const releaseAttachTTL = 5 * time.Second

// grantJSON is the JSON form of a grant printed by acquire and extend.
type grantJSON struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Fence uint64 `json:"fence"`
	TTLMs int64  `json:"ttl_ms"`
}

// cmdAcquire implements distlock acquire.
func (a *app) cmdAcquire(args []string) int {
	const cmd = "acquire"
	fs := flagSet(cmd)
	ttl := durationFlag(fs, "ttl", distlock.DefaultTTL)
	wait := durationFlag(fs, "wait", defaultWait)
	metadata := stringFlag(fs, "", "metadata")
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	fair := switchFlag(fs, distlock.WithFair(), "fair")
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME"); !ok {
		return code
	}
	name := pos[0]
	if err := checkTTL(*ttl); err != nil {
		return a.fail(cmd, err)
	}
	if *wait < 0 {
		return a.usage(cmd, "--wait cannot be negative (got %v)", *wait)
	}
	if *metadata == "" {
		*metadata = defaultMetadata("distlock acquire", nil)
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	b, lease, code := a.runAcquire(cmd, name, *redisURL, *wait, sigs,
		distlock.WithTTL(*ttl), distlock.WithMetadata(*metadata), distlock.WithAutoRenew(false), *fair)
	if lease == nil {
		return code
	}
	// Keep the lease: closing the client would release it.
	defer b.close(keepLeases)
	// The ttl the backend keeps (etcd: whole seconds, at least 2s), which
	// the script extends within.
	kept := lease.TTL()
	a.noteTTL(cmd, *ttl, kept, b.where)
	if *asJSON {
		a.printJSON(grantJSON{Name: name, Owner: lease.Owner(), Fence: lease.Token(), TTLMs: kept.Milliseconds()})
	} else {
		a.printGrantShell(name, lease.Owner(), lease.Token(), kept)
	}
	return exitOK
}

// printGrantShell prints a grant as shell assignments, for eval.
func (a *app) printGrantShell(name, owner string, fence uint64, ttl time.Duration) {
	fmt.Fprintf(a.stdout, "DISTLOCK_NAME=%s\nDISTLOCK_OWNER=%s\nDISTLOCK_FENCE=%d\nDISTLOCK_TTL=%s\n",
		shellQuote(name), shellQuote(owner), fence, ttl)
}

// cmdExtend implements distlock extend.
func (a *app) cmdExtend(args []string) int {
	const cmd = "extend"
	fs := flagSet(cmd)
	ttl := durationFlag(fs, "ttl", distlock.DefaultTTL)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	pos, err := parseOwnerArgs(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME", "OWNER"); !ok {
		return code
	}
	name, owner := pos[0], pos[1]
	if err := checkTTL(*ttl); err != nil {
		return a.fail(cmd, err)
	}
	// Keep the lease: closing the client would release it.
	ctx, b, done, err := a.connect(cmd, *redisURL, keepLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	lease, err := b.client.Attach(ctx, name, owner, distlock.WithTTL(*ttl), distlock.WithAutoRenew(false))
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	kept := lease.TTL() // what the backend keeps (etcd: whole seconds, at least 2s)
	a.noteTTL(cmd, *ttl, kept, b.where)
	if *asJSON {
		a.printJSON(grantJSON{Name: name, Owner: owner, Fence: lease.Token(), TTLMs: kept.Milliseconds()})
	} else {
		fmt.Fprintf(a.stdout, "extended %q: it expires in %v unless extended again (fence %d)\n", name, kept, lease.Token())
	}
	return exitOK
}

// cmdRelease implements distlock release.
func (a *app) cmdRelease(args []string) int {
	const cmd = "release"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	pos, err := parseOwnerArgs(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME", "OWNER"); !ok {
		return code
	}
	name, owner := pos[0], pos[1]
	ctx, b, done, err := a.connect(cmd, *redisURL, keepLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	// Attach proves ownership by extending the lock (to a short ttl), then
	// Release drops it.
	lease, err := b.client.Attach(ctx, name, owner, distlock.WithTTL(releaseAttachTTL), distlock.WithAutoRenew(false))
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	if err := lease.Release(ctx); err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	fmt.Fprintf(a.stdout, "released %q\n", name)
	return exitOK
}

// printJSON prints v as indented JSON.
func (a *app) printJSON(v any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// printJSONLine prints v as JSON on one line (a stream of objects, one per
// line, as distlock leader --json --watch prints).
func (a *app) printJSONLine(v any) { _ = json.NewEncoder(a.stdout).Encode(v) }

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fmtFence renders a fencing token, "-" for none.
func fmtFence(t uint64) string {
	if t == 0 {
		return "-"
	}
	return strconv.FormatUint(t, 10)
}
