package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/quorum"
)

// Admin tunables: locks asked for per page of a listing, and the longest
// metadata a table shows.
const (
	listPage        = 500
	tableMetadata   = 40
	defaultMaxTTL   = distlock.MaxTTL
	forceReleaseAsk = "Free it? Its holder only learns at its next renewal. [y/N] "
)

// infoJSON is the JSON form of a lock's state (status, list).
type infoJSON struct {
	Name     string `json:"name"`
	Held     bool   `json:"held"`
	Owner    string `json:"owner,omitempty"`
	Holds    int    `json:"holds,omitempty"`
	Metadata string `json:"metadata,omitempty"`
	// Traceparent is the trace context a traced client stored with the
	// grant (distlock.TraceMetadata), apart from the metadata.
	Traceparent string `json:"traceparent,omitempty"`
	TTLMs       *int64 `json:"ttl_ms,omitempty"` // -1: never expires
	Fence       uint64 `json:"fence,omitempty"`
	HighWater   uint64 `json:"high_water"`
	Waiters     int    `json:"waiters"`
	// A shared lock: its kind (semaphore, rwlock), a semaphore's limit, a
	// held reader-writer lock's mode (read, write) and every holder (the
	// fields owner to ttl_ms above stay empty; fence is the highest).
	Kind    string       `json:"kind,omitempty"`
	Limit   int          `json:"limit,omitempty"`
	Mode    string       `json:"mode,omitempty"`
	Holders []holderJSON `json:"holders,omitempty"`
	// Partial names the Redlock nodes that did not answer in time: the
	// state is then the other nodes' (absent when every node answered).
	Partial *partialJSON `json:"partial,omitempty"`
}

// shownMetadata is the metadata a holder's caller set, without the trace
// context a traced client stored with it (distlock.TraceMetadata).
func shownMetadata(stored string) string {
	metadata, _ := distlock.TraceMetadata(stored)
	return metadata
}

func toJSON(i engine.Info) infoJSON {
	j := infoJSON{Name: i.Name, Held: i.Held, HighWater: i.HighWater, Waiters: i.Waiters, Partial: toPartialJSON(i.Partial)}
	if i.Held {
		ttl := i.TTL.Milliseconds()
		if i.TTL < 0 {
			ttl = -1
		}
		j.Owner, j.Holds, j.TTLMs, j.Fence = i.Owner, i.Count, &ttl, i.Token
		j.Metadata, j.Traceparent = distlock.TraceMetadata(i.Metadata)
	}
	sharedJSON(&j, i)
	return j
}

// cmdStatus implements distlock status.
func (a *app) cmdStatus(args []string) int {
	const cmd = "status"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME"); !ok {
		return code
	}
	name := pos[0]
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	info, err := inspectAny(ctx, b.client, name)
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	if *asJSON {
		a.printJSON(toJSON(info))
		return exitOK
	}
	if info.Kind != 0 {
		printSharedStatus(a.stdout, info)
		return exitOK
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "name:\t%s\n", info.Name)
	if info.Held {
		fmt.Fprintf(w, "state:\theld\n")
		fmt.Fprintf(w, "holder:\t%s\n", info.Owner)
		if info.Count > 1 {
			fmt.Fprintf(w, "holds:\t%d (re-entered)\n", info.Count)
		}
		metadata, trace := distlock.TraceMetadata(info.Metadata)
		fmt.Fprintf(w, "metadata:\t%s\n", metadata)
		if trace != "" {
			fmt.Fprintf(w, "trace:\t%s\n", trace)
		}
		fmt.Fprintf(w, "ttl left:\t%s\n", fmtTTL(info.TTL))
		fmt.Fprintf(w, "fence:\t%s\n", fmtFence(info.Token))
	} else {
		fmt.Fprintf(w, "state:\tfree\n")
	}
	fmt.Fprintf(w, "fence high-water:\t%s\n", fmtFence(info.HighWater))
	fmt.Fprintf(w, "waiters:\t%d\n", info.Waiters)
	if info.Partial != nil {
		fmt.Fprintf(w, "partial:\t%s\n", partialNote(info.Partial))
	}
	if q, ok := b.eng.(*quorum.Engine); ok {
		fmt.Fprintf(w, "nodes:\t\n")
		for _, n := range q.InspectNodes(ctx, name) {
			addr := n.Node
			ni, err := n.Info, n.Err
			switch {
			case err != nil:
				fmt.Fprintf(w, "  %s\terror: %v\n", addr, err)
			case ni.Held:
				fmt.Fprintf(w, "  %s\theld by %s, ttl %s, fence %s, high-water %s\n", addr, ni.Owner, fmtTTL(ni.TTL), fmtFence(ni.Token), fmtFence(ni.HighWater))
			default:
				fmt.Fprintf(w, "  %s\tfree, high-water %s\n", addr, fmtFence(ni.HighWater))
			}
		}
	}
	_ = w.Flush()
	if info.Held && info.TTL < 0 {
		fmt.Fprintf(a.stdout, "\n%q never expires: a leaked lock. Free it with: distlock force-release %s\n", name, shellQuote(name))
	}
	return exitOK
}

// cmdList implements distlock list.
func (a *app) cmdList(args []string) int {
	const cmd = "list"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "[PREFIX]"); !ok {
		return code
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	lister, ok := b.eng.(engine.Lister)
	if !ok {
		return a.fail(cmd, &cliError{code: exitFailed, msg: "this backend cannot list locks"})
	}
	infos, err := listAll(ctx, lister, prefix)
	p, partial := engine.AsPartial(err)
	if err != nil && !partial {
		return a.fail(cmd, backendErr(b, "list", err))
	}
	if partial {
		fmt.Fprintf(a.stderr, "distlock list: partial: %s\n", partialNote(p))
	}
	if *asJSON {
		out := make([]infoJSON, 0, len(infos))
		for _, i := range infos {
			j := toJSON(i)
			if j.Partial == nil {
				j.Partial = toPartialJSON(p)
			}
			out = append(out, j)
		}
		a.printJSON(out)
		return exitOK
	}
	if len(infos) == 0 {
		if prefix != "" {
			fmt.Fprintf(a.stdout, "no lock is held whose name starts with %q\n", prefix)
		} else {
			fmt.Fprintln(a.stdout, "no lock is held")
		}
		return exitOK
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tKIND\tHOLDER\tWEIGHT\tTTL\tFENCE\tWAITERS\tMETADATA")
	for _, i := range infos {
		if i.Kind == 0 {
			fmt.Fprintf(w, "%s\tmutex\t%s\t-\t%s\t%s\t%d\t%s\n", i.Name, i.Owner, fmtTTL(i.TTL), fmtFence(i.Token), i.Waiters, cut(shownMetadata(i.Metadata), tableMetadata))
			continue
		}
		// A shared lock: one row per holder.
		kind := kindOf(i)
		if i.Kind == engine.Semaphore {
			kind = fmt.Sprintf("semaphore/%d", i.Limit)
		}
		if len(i.Holders) == 0 {
			fmt.Fprintf(w, "%s\t%s\t(free)\t-\t-\t-\t%d\t\n", i.Name, kind, i.Waiters)
		}
		for _, h := range i.Holders {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i.Name, kind, h.Owner, holderText(i.Kind, h), fmtTTL(h.TTL), fmtFence(h.Token), i.Waiters, cut(shownMetadata(h.Metadata), tableMetadata))
		}
	}
	_ = w.Flush()
	return exitOK
}

// listAll pages through a listing, deduplicating, sorted by name.
func listAll(ctx context.Context, l engine.Lister, prefix string) ([]engine.Info, error) {
	return pageAll(func(cursor string) ([]engine.Info, string, error) {
		return l.List(ctx, prefix, cursor, listPage)
	}, func(i engine.Info) string { return i.Name })
}

// pageAll reads every page of a paged listing (cursor "" first, until next
// is ""), keeps one item per key and sorts them by key. A page that comes
// with an *engine.PartialError is kept, and the error returned with the
// items (the last one when several pages are partial).
func pageAll[T any](page func(cursor string) ([]T, string, error), key func(T) string) ([]T, error) {
	byKey := map[string]T{}
	cursor := ""
	var partial error
	for {
		items, next, err := page(cursor)
		if _, ok := engine.AsPartial(err); ok {
			partial, err = err, nil
		}
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			byKey[key(it)] = it
		}
		if next == "" {
			break
		}
		cursor = next
	}
	out := make([]T, 0, len(byKey))
	for _, it := range byKey {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out, partial
}

// leakJSON is the JSON form of a leak.
type leakJSON struct {
	Key   string `json:"key"`
	Name  string `json:"name,omitempty"`
	Kind  string `json:"kind"`
	Type  string `json:"type"`
	TTLMs int64  `json:"ttl_ms"` // -1: never expires
	// A shared lock's holder whose ttl is beyond --max-ttl: its owner, its
	// weight and (reader-writer lock) its mode.
	Holder string `json:"holder,omitempty"`
	Weight int    `json:"weight,omitempty"`
	Mode   string `json:"mode,omitempty"`
}

// cmdLeaks implements distlock leaks.
func (a *app) cmdLeaks(args []string) int {
	const cmd = "leaks"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	asJSON := boolFlag(fs, "json")
	maxTTL := durationFlag(fs, "max-ttl", defaultMaxTTL)
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "[PREFIX]"); !ok {
		return code
	}
	if *maxTTL <= 0 {
		return a.usage(cmd, "--max-ttl must be positive (got %v)", *maxTTL)
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	finder, ok := b.eng.(engine.LeakFinder)
	_, listed := b.eng.(engine.Lister)
	if !ok && !listed {
		return a.fail(cmd, &cliError{code: exitFailed, msg: "this backend cannot look for leaks"})
	}
	var leaks []leak
	var partials []*engine.PartialError
	// partial keeps a partial answer's mark (and reports whether err was
	// one, or nil).
	partial := func(err error) bool {
		p, ok := engine.AsPartial(err)
		if ok {
			partials = append(partials, p)
		}
		return err == nil || ok
	}
	// The engine's leaks and the listing's run at once: on Redlock a node
	// that does not answer then costs one timeout, not one per listing.
	var found []engine.Leak
	var findErr error
	searched := make(chan struct{})
	go func() {
		defer close(searched)
		if ok {
			found, findErr = findLeaks(ctx, finder, prefix, *maxTTL)
		}
	}()
	more, err := listedLeaks(ctx, b, prefix, *maxTTL)
	<-searched
	if !partial(findErr) {
		return a.fail(cmd, backendErr(b, "leaks", findErr))
	}
	if !partial(err) {
		return a.fail(cmd, backendErr(b, "leaks", err))
	}
	for _, l := range withoutListedHolders(found, more) {
		leaks = append(leaks, leak{Leak: l})
	}
	leaks = append(leaks, more...)
	if len(partials) > 0 {
		fmt.Fprintf(a.stderr, "distlock leaks: partial: %s\n", partialNote(partials[0]))
	}
	if *asJSON {
		a.printJSON(leaksJSON(leaks))
	} else {
		a.printLeaks(leaks, *maxTTL)
	}
	if len(leaks) > 0 {
		return exitFailed
	}
	return exitOK
}

// leaksJSON is leaks as --json prints them: a ttl of -1 for none, a
// latch's kind "latch" (leakKind), and a shared lock's holder with its
// weight (and an RW lock's mode).
func leaksJSON(leaks []leak) []leakJSON {
	out := make([]leakJSON, 0, len(leaks))
	for _, l := range leaks {
		ttl := l.TTL.Milliseconds()
		if l.TTL < 0 {
			ttl = -1
		}
		j := leakJSON{Key: l.Key, Name: l.Name, Kind: leakKind(l.Leak), Type: l.Type, TTLMs: ttl}
		if l.holder != nil {
			j.Holder, j.Weight = l.holder.Owner, l.holder.Weight
			if l.Type == engine.RWLock.String() {
				j.Mode = modeOf(l.holder.Weight)
			}
		}
		out = append(out, j)
	}
	return out
}

// printLeaks prints leaks as a table and says how to fix them.
func (a *app) printLeaks(leaks []leak, maxTTL time.Duration) {
	if len(leaks) == 0 {
		fmt.Fprintf(a.stdout, "no leaks: every lock key expires within %v\n", maxTTL)
		return
	}
	w := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tKIND\tTYPE\tTTL")
	for _, l := range leaks {
		typ := l.Type
		if latchLeak(l.Leak) && !latchMarked(l.Leak) {
			typ = "latch (" + l.Type + ")"
		}
		if l.holder != nil {
			typ = fmt.Sprintf("%s: holder %s %s", l.Type, l.holder.Owner, holderText(l.shared, *l.holder))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", l.Key, leakKind(l.Leak), typ, fmtTTL(l.TTL))
	}
	_ = w.Flush()
	fmt.Fprintf(a.stdout, "\n%d key(s) with no expiry or a ttl beyond %v. Code that sets a lock key and its expiry in two steps\n"+
		"(SETNX, then EXPIRE) leaves these behind when it dies in between: nobody can take such a lock again.\n", len(leaks), maxTTL)
	var locks []string
	holders, latches := 0, 0
	for _, l := range leaks {
		switch {
		case l.holder != nil:
			holders++
		case latchLeak(l.Leak):
			latches++
		case l.Kind == engine.LeakLock:
			locks = append(locks, shellQuote(l.Name))
		}
	}
	if holders > 0 {
		fmt.Fprintln(a.stdout, "A shared lock's holder keeps its permits until its ttl ends (or its owner releases them).")
	}
	if len(locks) > 0 {
		fmt.Fprintf(a.stdout, "Free a leaked lock once its holder is known dead: distlock force-release %s\n", locks[0])
	}
	if latches > 0 {
		fmt.Fprintln(a.stdout, "A countdown latch still counting has no expiry by design: it goes when its count reaches zero.\n"+
			"Deleting it opens the latch: its waiters return as if it had reached zero. Do not delete a latch still in use.")
	}
	if len(locks)+holders+latches < len(leaks) {
		fmt.Fprintln(a.stdout, "Other keys: find out what wrote them, then delete them with redis-cli DEL KEY.")
	}
}

// latchKind is the kind leaks gives a countdown latch still counting (in
// the table and in JSON), which engines report as engine.LeakOther.
const latchKind = "latch"

// leakKind is l's kind as leaks shows it: latchKind for a countdown
// latch still counting (latchLeak), else the engine's.
func leakKind(l engine.Leak) string {
	if latchLeak(l) {
		return latchKind
	}
	return l.Kind
}

// latchLeak reports whether l is a countdown latch's count, which has no
// expiry by design while it counts: marked so by its engine (latchMarked),
// or, on engines that do not mark it, at a latch's key (Redis:
// distlock:{NAME}:latch; etcd: distlock/NAME/latch).
func latchLeak(l engine.Leak) bool {
	return l.Kind == engine.LeakOther && (latchMarked(l) ||
		strings.HasSuffix(l.Key, "}:latch") || strings.HasSuffix(l.Key, "/latch"))
}

// latchMarked reports whether l's engine marked it as a countdown latch
// still counting: its type begins with "latch " (ZooKeeper: "latch znode";
// PostgreSQL: "latch row").
func latchMarked(l engine.Leak) bool {
	return strings.HasPrefix(l.Type, "latch ")
}

// findLeaks pages through the leaks, deduplicating, sorted by key.
func findLeaks(ctx context.Context, f engine.LeakFinder, prefix string, maxTTL time.Duration) ([]engine.Leak, error) {
	return pageAll(func(cursor string) ([]engine.Leak, string, error) {
		return f.Leaks(ctx, prefix, maxTTL, cursor, listPage)
	}, func(l engine.Leak) string { return l.Key })
}

// cmdForceRelease implements distlock force-release.
func (a *app) cmdForceRelease(args []string) int {
	const cmd = "force-release"
	fs := flagSet(cmd)
	redisURL := stringFlag(fs, "", "redis", "backend")
	yes := boolFlag(fs, "y", "yes")
	owner := stringFlag(fs, "", "owner")
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err, "NAME"); !ok {
		return code
	}
	name := pos[0]
	one := flagGiven(fs, "owner")
	if one {
		if err := distlock.ValidateOwner(*owner); err != nil || *owner == "" {
			return a.fail(cmd, usageErr("invalid --owner: %s", ownerProblem(err)))
		}
	}
	ctx, b, done, err := a.connect(cmd, *redisURL, releaseLeases)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer done()
	if b.role != "" && b.role != "admin" {
		// A server's token whose role may not force-release: refused
		// before anything is read or asked, as the server would refuse it.
		return a.fail(cmd, usageErr("the %s refused the token for force-release (forbidden): its role is %s, and force-release needs admin.\n"+
			"Set %s to an admin token of the server.", b.eng, b.role, envToken))
	}

	// What is there: a lock, nothing, or a key that is not a distlock lock
	// (Inspect fails on it; force-release deletes it all the same).
	info, ierr := inspectAny(ctx, b.client, name)
	if code, done := a.tellForceRelease(cmd, name, *owner, b.where, info, ierr); done {
		return code
	}
	if !*yes {
		if err := a.confirm(name); err != nil {
			return a.fail(cmd, err)
		}
	}
	if one {
		if err := b.client.ForceReleaseHolder(ctx, name, *owner); err != nil {
			return a.fail(cmd, explain(err, name, b.where))
		}
		fmt.Fprintf(a.stdout, "released %s's hold of %q; the head of its queue was woken if it fits\n", *owner, name)
		return exitOK
	}
	held, err := b.client.ForceRelease(ctx, name)
	if err != nil {
		return a.fail(cmd, explain(err, name, b.where))
	}
	if held {
		fmt.Fprintf(a.stdout, "released %q; its waiters were woken\n", name)
	} else {
		fmt.Fprintf(a.stdout, "%q was not held any more: nothing to release\n", name)
	}
	return exitOK
}

// tellForceRelease says on standard error what a force-release of name
// will free, as inspected (info; ierr: the inspection's error): owner's
// hold only (--owner: owner is not ""), every holder, or whatever is there
// when the state could not be read. done: nothing to free (or owner holds
// nothing), and the command exits with code.
func (a *app) tellForceRelease(cmd, name, owner, where string, info engine.Info, ierr error) (code int, done bool) {
	switch {
	case owner != "" && ierr == nil:
		h, ok := holderOf(info, owner)
		if !ok {
			return a.fail(cmd, explain(&distlock.NotHolderError{Name: name, Owner: owner}, name, where)), true
		}
		what := holderText(info.Kind, h)
		if info.Kind == 0 {
			// A mutex (an election, a set's member): its one holder, no weight.
			what = "the mutex"
			if h.Count > 1 {
				what = fmt.Sprintf("the mutex, %d holds (re-entered)", h.Count)
			}
		}
		fmt.Fprintf(a.stderr, "%q is held by %s, %s (ttl left %s; metadata: %s); only that holder is freed.\n",
			name, h.Owner, what, fmtTTL(h.TTL), shownMetadata(h.Metadata))
	case ierr == nil && !info.Held:
		fmt.Fprintf(a.stdout, "%q is not held: nothing to release\n", name)
		return exitOK, true
	case ierr == nil && info.Kind != 0:
		fmt.Fprintf(a.stderr, "%q is a %s held by %d (every holder is freed):\n", name, info.Kind, len(info.Holders))
		for _, h := range info.Holders {
			fmt.Fprintf(a.stderr, "  %s, %s (ttl left %s; metadata: %s)\n", h.Owner, holderText(info.Kind, h), fmtTTL(h.TTL), shownMetadata(h.Metadata))
		}
	case ierr == nil:
		fmt.Fprintf(a.stderr, "%q is held by %s (ttl left %s; metadata: %s).\n", name, info.Owner, fmtTTL(info.TTL), shownMetadata(info.Metadata))
	default:
		fmt.Fprintf(a.stderr, "could not read the state of %q (%v).\n", name, strings.TrimPrefix(ierr.Error(), "distlock: "))
	}
	return 0, false
}

// confirm asks on standard input whether to force-release name, and
// returns the refusal unless the answer is yes.
func (a *app) confirm(name string) error {
	fmt.Fprint(a.stderr, forceReleaseAsk)
	answer, err := bufio.NewReader(a.stdin).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	if answer == "y" || answer == "yes" {
		return nil
	}
	why := "not confirmed"
	if answer == "" && err != nil {
		why = "no answer on standard input"
	}
	return &cliError{code: exitFailed, msg: fmt.Sprintf("%s: %q was left as it is. Pass --yes to skip the question.", why, name)}
}

// holderOf returns owner's entry among info's holders (a mutex's one
// holder included).
func holderOf(info engine.Info, owner string) (engine.Holder, bool) {
	for _, h := range info.Holders {
		if h.Owner == owner {
			return h, true
		}
	}
	return engine.Holder{}, false
}

// ownerProblem says what is wrong with an --owner value (err from
// distlock.ValidateOwner, nil for an empty one).
func ownerProblem(err error) string {
	var ae *distlock.ArgumentError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return "empty"
}

// backendErr wraps an engine error of an admin command.
func backendErr(b *backend, op string, err error) error {
	return &cliError{code: exitBackend, msg: fmt.Sprintf("the lock backend (%s) failed during %s: %v.\n"+
		"Check that Redis is up and reachable, then retry.", b.where, op, err)}
}

// cut shortens s to at most n runes, with an ellipsis.
func cut(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
