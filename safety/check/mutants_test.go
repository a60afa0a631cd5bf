package check

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mutant is one deliberate defect in a check: Old, found exactly once in
// File (relative to the safety module), replaced by New.
type mutant struct {
	ID, Check, File, Old, New string
}

// mutants are the defects the checks' unit tests must catch
// (docs/SAFETY.md, "Mutants of the checks"). TestMutantsApply keeps the
// table in step with the code; TestMutants (DISTLOCK_MUTANTS=1) applies
// each one with go test -overlay and runs this package's tests, which must
// fail.
var mutants = []mutant{
	{"I1-release", "I1", "check/check.go", "if t, ok := releases[g.Owner]; ok && t < end {", "if t, ok := releases[g.Owner]; ok && t < end && false {"},
	{"I1-loss", "I1", "check/check.go", "if t, ok := lossAt[g.Owner]; ok && t < end {", "if t, ok := lossAt[g.Owner]; ok && t < end && false {"},
	{"I1-renewals", "I1", "check/check.go", "append(g.Intervals, validity[g.Owner]...)", "append(g.Intervals, validity[\"\"]...)"},
	{"I1-expire", "I1", "check/windows.go", "if a.to > x.from {", "if a.to > x.to {"},
	{"I2-tie", "I2", "check/stale.go", "if e.Token < hw || (e.Token == hw && e.Owner != holder) {", "if e.Token < hw || (e.Token == hw && e.Owner != holder && false) {"},
	{"I2-reads", "I2", "check/stale.go", "(reads || e.Kind == history.KindWrite)", "(e.Kind == history.KindWrite)"},
	{"I2-final-order", "I2", "check/stale.go", "if t < prev {", "if t < prev && false {"},
	{"I2-refused", "I2", "check/stale.go", "if e.Result == history.Accepted && (reads", "if e.Result != history.Unknown && (reads"},
	{"I2-realtime", "I2", "check/stale.go", "byComplete[k].Complete < e.Invoke", "byComplete[k].Invoke < e.Invoke"},
	{"I2-final-missing", "I2/I4", "check/check.go", "!ok && r.AckFenced > 0 {", "!ok && r.AckFenced > 0 && false {"},
	{"I2-superseded", "I2", "check/superseded.go", "if e.Result == history.Accepted || e.Result == history.Rejected {", "if e.Result == history.Accepted {"},
	{"I2-refused-newer-tie", "I2", "check/superseded.go", "a.Token >= b.Token", "a.Token > b.Token"},
	{"I3-tie", "I3", "check/tokens.go", "if g.Token <= hw {", "if g.Token < hw {"},
	{"I3-max", "I3", "check/tokens.go", "hw = max(hw, h.grants[k].Token)", "hw = h.grants[k].Token"},
	{"I3-realtime", "I3", "check/tokens.go", "h.grants[k].Complete < g.Invoke", "h.grants[k].Invoke < g.Invoke"},
	{"I4-missing", "I4", "check/lost.go", "if ok && !in[e.Add] {", "if ok && !in[e.Add] && false {"},
	{"I4-refused", "I4", "check/lost.go", "e.Result != history.Accepted", "e.Result == history.Unknown"},
	{"I5-stale-apply", "I5", "check/linear.go", "if st.stale(in) || (!in.write && out.value != st.value) {", "if !in.write && out.value != st.value {"},
	{"I5-refusal", "I5", "check/linear.go", "return st.stale(in), st", "return true, st"},
	{"I5-tie", "I5", "check/linear.go", "(in.token == s.token && in.holder != s.holder)", "false"},
	{"I5-read-value", "I5", "check/linear.go", "|| (!in.write && out.value != st.value) {", "{"},
	{"I5-unknown", "I5", "check/linear.go", "ret = math.MaxInt64 / 2", "ret = e.Invoke + 1 + 0*math.MaxInt64"},
	{"I5-timeout", "I5", "check/linear.go", "\treturn Timeout\n}", "\treturn \"ok\"\n}"},
	{"I5-timeout-judged", "I5", "check/check.go", "if r.Linearizable == Timeout {", "if r.Linearizable == \"\" {"},
	{"I6-lag", "I6", "check/signal.go", "if lag > limit {", "if lag > limit+p.TTL/10 {"},
	{"I6-checked", "I6", "check/signal.go", "e.At <= e.Deadline+int64(limit) {", "e.At <= e.Deadline+int64(limit)+int64(p.TTL) {"},
	{"I6-stopped", "I6", "check/signal.go", "if stopsClient(f.Class) && f.Target == cl &&", "if false && f.Target == cl &&"},
	{"I6-library", "I6", "check/signal.go", "return g != nil && (g.Impl == client.ImplLibrary || g.Impl == \"\" || g.Impl == client.ImplLateLoss)", "return g != nil || client.ImplLibrary == \"\""},
	{"I7-held-at-heal", "I7", "check/recovery.go", "t0 = max(t0, g.End)", "t0 = max(t0, heal)"},
	{"I7-no-grant", "I7", "check/recovery.go", "if h.runEnd-t0 > bound {", "if h.runEnd-t0 > bound && false {"},
	{"I7-merge", "I7", "check/recovery.go", "j < len(ivs) && ivs[j][0] <= end;", "j < len(ivs) && false;"},
	{"I7-bound", "I7", "check/recovery.go", "if int64(d) > bound {", "if int64(d) > 2*bound {"},
	{"I7-queue-bound", "I7", "check/recovery.go", "if p.RecoveryBound > 0 {", "if false {"},
	{"I8-margin", "I8", "check/queue.go", "a.Invoke+int64(margin) >= b.Invoke", "a.Invoke >= b.Invoke"},
	{"I8-order", "I8", "check/queue.go", "if a.End > b.Complete {", "if a.End > b.Complete+int64(time.Second) {"},
	{"I8-stopped", "I8", "check/queue.go", "if intersects(stops[a.Client], a.Invoke, b.Complete) || intersects(", "if intersects("},
	{"I8-queue-lost", "I8", "check/queue.go", "intersects(losses, a.Invoke, b.Complete) {", "intersects(losses[:0], a.Invoke, b.Complete) {"},
	{"I8-killed", "I8/I9", "check/queue.go", "if x >= c.Invoke && x < c.End {", "if false {"},
	{"I9-stopped", "I9", "check/queue.go", "ivs = subtract(ivs, stopWindows(h, c.Client))", "ivs = subtract(ivs, nil)"},
	{"I9-bound", "I9", "check/queue.go", "if d > bound {", "if d > 2*bound {"},
	{"I9-held", "I9", "check/queue.go", "free := subtract(union(waiting), union(held))", "free := union(waiting); _ = held"},
	{"I10-deadline", "I10", "check/election.go", "l.End = min(l.End, l.Deadline)", "l.End = max(l.End, l.Deadline)"},
	{"I10-overlap", "I10", "check/election.go", "if b.Elected >= a.End {", "if b.Elected >= a.Elected {"},
	{"I10-killed", "I10", "check/election.go", "if k >= g.Complete && (l.Stopped == 0 || k < l.Stopped) {", "if false {"},
	{"I11-tie", "I11", "check/election.go", "if l.Term <= hw {", "if l.Term < hw {"},
	{"I11-max", "I11", "check/election.go", "hw = max(hw, l.Term)", "hw = l.Term"},
	{"I12-weight", "I12", "check/shared.go", "return max(g.Weight, 1)", "return 1"},
	{"I12-limit", "I12", "check/shared.go", "held > limit {", "held > limit+1 {"},
	{"I12-one-window", "I12", "check/shared.go", "if seen[a.g] {", "if false {"},
	{"I13-writer-joined", "I13", "check/shared.go", "writer = writer || a.g.Access == \"write\"", "writer = writer || false"},
	{"I13-pair", "I13", "check/shared.go", "if writer && len(holders) > 1 {", "if writer && len(holders) > 2 {"},
}

// moduleDir is the safety module's root (this package is check/).
func moduleDir(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// TestMutantsApply: every mutant's text is in its file exactly once, so
// the table cannot go stale silently as the checks change.
func TestMutantsApply(t *testing.T) {
	root := moduleDir(t)
	ids := map[string]bool{}
	for _, m := range mutants {
		if ids[m.ID] {
			t.Errorf("%s: duplicate id", m.ID)
		}
		ids[m.ID] = true
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), m.Old); n != 1 {
			t.Errorf("%s: %q found %d times in %s, want once", m.ID, m.Old, n, m.File)
		}
	}
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// TestMutants applies each mutant (go test -overlay, nothing on disk
// changes) and runs this package's other tests: each mutant must make
// them fail. It prints the table mutant → tests that killed it. It runs
// go test once per mutant (minutes in all: run it with -timeout 30m), so
// only when DISTLOCK_MUTANTS is 1 (all) or a comma-separated list of id
// prefixes (I5,I7-merge).
func TestMutants(t *testing.T) {
	want := os.Getenv("DISTLOCK_MUTANTS")
	if want == "" {
		t.Skip("set DISTLOCK_MUTANTS=1 (or id prefixes) to run the checks' mutants")
	}
	root := moduleDir(t)
	dir := t.TempDir()
	survivors := 0
	for _, m := range mutants {
		if want != "1" && !slices.ContainsFunc(strings.Split(want, ","), func(p string) bool { return strings.HasPrefix(m.ID, p) }) {
			continue
		}
		path := filepath.Join(root, m.File)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		mutated := filepath.Join(dir, m.ID+".go")
		if err := os.WriteFile(mutated, []byte(strings.Replace(string(src), m.Old, m.New, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{path: mutated}})
		ov := filepath.Join(dir, m.ID+".json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-overlay", ov, "-skip", "^TestMutants", "-v", "./check/")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off", "DISTLOCK_MUTANTS=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		var killers []string
		for _, f := range failLine.FindAllStringSubmatch(out.String(), -1) {
			killers = append(killers, f[1])
		}
		switch {
		case err == nil:
			survivors++
			t.Errorf("%-22s %-5s SURVIVED", m.ID, m.Check)
		case len(killers) == 0:
			t.Errorf("%s %s: does not build or run:\n%s", m.ID, m.Check, out.String())
		default:
			t.Logf("%-22s %-5s killed by %s", m.ID, m.Check, strings.Join(killers, ", "))
		}
	}
	if survivors > 0 {
		t.Errorf("%d mutants survived", survivors)
	}
}
