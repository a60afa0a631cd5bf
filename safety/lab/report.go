package lab

import (
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/distlock/distlock/safety/check"
)

// Summary is one line about an outcome.
func Summary(o *Outcome) string {
	r := o.Result
	verdict := "PASS"
	if len(o.Problems) > 0 {
		verdict = "FAIL: " + strings.Join(o.Problems, "; ")
	}
	return fmt.Sprintf("grants %d/%d/%d/%d faults %d | I1 %d I2 %d/%d I3 %d I4 %d/%d (of %d/%d) I5 %s I6 late %d (p99 %v) I7 slow %d (max %v) | client lag %v server lag %s | %s",
		r.Grants.Attempted, r.Grants.OK, r.Grants.Failed, r.Grants.Unknown, r.Faults,
		len(r.Overlaps), r.StaleFenced, r.StaleControl, r.TokenInversions,
		r.LostFenced, r.LostControl, r.AckFenced, r.AckControl, r.Linearizable,
		r.Late, check.Percentile(r.Lags, 0.99).Round(100*time.Microsecond),
		r.Slow, maxDur(r.Recoveries).Round(time.Millisecond), r.ClientLag.Round(time.Millisecond), serverLag(r), queueSummary(o)+electSummary(o)+sharedSummary(o)+sentinelSummary(o)+verdict)
}

// serverLag is the slowest answer the server probe counted and its
// server ("n/a": none counted).
func serverLag(r check.Result) string {
	if r.SlowServer == "" {
		return "n/a"
	}
	return fmt.Sprintf("%v (%s)", r.ServerLag.Round(100*time.Microsecond), r.SlowServer)
}

// sentinelSummary is the Sentinel failover's part of Summary: the fenced
// resource's answers across the failover.
func sentinelSummary(o *Outcome) string {
	if !o.Spec.Scenario.Sentinel {
		return ""
	}
	return fmt.Sprintf("superseded holder's applies accepted %d, newer holder's refused %d | ", o.Result.Superseded, o.Result.RefusedNewer)
}

// sharedSummary is the shared-lock checks' part of Summary.
func sharedSummary(o *Outcome) string {
	s := o.Spec.Scenario
	if s.Shared == "" {
		return ""
	}
	r := o.Result
	return fmt.Sprintf("%s: I12 over limit %d (limit %d, most held %d) I13 writer with others %d | ",
		s.Shared, len(r.OverLimit), s.Limit, r.MaxHeld, len(r.WriterOverlaps))
}

// electSummary is the election checks' part of Summary.
func electSummary(o *Outcome) string {
	if !o.Spec.Scenario.Elect {
		return ""
	}
	r := o.Result
	d := r.Deposed
	return fmt.Sprintf("leaderships %d (unended %d) I10 overlaps %d (max %v) I11 inversions %d deposed writes fenced %d (rejected %d, accepted %d) control %d (accepted %d) | ",
		len(r.Leaderships), r.Unended, len(r.LeaderOverlaps), maxOverlap(r.LeaderOverlaps).Round(time.Millisecond), r.TermInversions,
		d.Fenced, d.FencedRejected, d.FencedAccepted, d.Control, d.ControlAccepted)
}

func maxOverlap(os []check.LeaderOverlap) time.Duration {
	var m time.Duration
	for _, o := range os {
		m = max(m, o.Duration)
	}
	return m
}

// electMarkdown renders the election checks of the election runs (I10,
// I11, the deposed leaders' writes).
func electMarkdown(outs []*Outcome) string {
	var b strings.Builder
	for _, o := range outs {
		if !o.Spec.Scenario.Elect {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| # | scenario | mode | control | leaderships (killed) | faults | I10 overlapping pairs (longest ms) | I11 term inversions | deposed writes: fenced rejected / accepted | control accepted | I2 stale fenced / control | I6 lag ms p99 (late of n) | I7 recovery max ms (slow) | verdict |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		r, s := o.Result, o.Spec
		ctl := "-"
		if s.Control != NoControl {
			ctl = "**NC: " + string(s.Control) + "**"
		}
		verdict := "pass"
		if len(o.Problems) > 0 {
			verdict = "**FAIL**: " + strings.Join(o.Problems, "; ")
		} else if s.Control != NoControl {
			verdict = "pass (detected: " + s.Control.Expect() + ")"
		}
		killed := 0
		for _, l := range r.Leaderships {
			if l.Killed {
				killed++
			}
		}
		i6 := "n/a"
		if len(r.Lags) > 0 {
			i6 = fmt.Sprintf("%s (%d of %d)", ms(check.Percentile(r.Lags, .99)), r.Late, len(r.Lags))
		}
		d := r.Deposed
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %d (%d) | %d | %d (%s) | %d | %d / %d of %d | %d of %d | %d / %d | %s | %.0f (%d) | %s |\n",
			s.Scenario.ID, s.Scenario.Key, s.Mode.Name, ctl, len(r.Leaderships), killed, r.Faults,
			len(r.LeaderOverlaps), ms(maxOverlap(r.LeaderOverlaps)), r.TermInversions,
			d.FencedRejected, d.FencedAccepted, d.Fenced, d.ControlAccepted, d.Control,
			r.StaleFenced, r.StaleControl, i6, float64(maxDur(r.Recoveries))/float64(time.Millisecond), r.Slow, verdict)
	}
	return b.String()
}

// queueSummary is the queue checks' part of Summary.
func queueSummary(o *Outcome) string {
	if !o.Spec.Scenario.Queue {
		return ""
	}
	r := o.Result
	return fmt.Sprintf("I8 out of order %d of %d pairs (%d excluded, %d calls) I9 longest free %v (over %d) | ",
		len(r.OutOfOrder), r.OrderPairs, r.OrderExcluded, r.Calls, r.LongestFree.Round(time.Millisecond), r.FreeOver)
}

func maxDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

// Markdown renders outcomes as the report table of docs/SAFETY.md.
func Markdown(outs []*Outcome) string {
	var b strings.Builder
	b.WriteString("| # | scenario | mode | grants att/ok/fail/unk | faults | I1 overlaps | I2 stale fenced / control | I3 inversions | I4 lost fenced / control (acked) | I5 | I6 lag ms p50/p99/max (late of n) | I7 recovery max ms (slow) | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, o := range outs {
		r, s := o.Result, o.Spec
		name := s.Scenario.Key
		if s.Control != NoControl {
			name += " **NC: " + string(s.Control) + "**"
		}
		i1 := fmt.Sprint(len(r.Overlaps))
		if !s.Scenario.Excludes(s.Mode) && s.Control == NoControl {
			i1 += " (not claimed)"
		}
		verdict := "pass"
		if len(o.Problems) > 0 {
			verdict = "**FAIL**: " + strings.Join(o.Problems, "; ")
		} else if s.Control != NoControl {
			verdict = "pass (detected: " + s.Control.Expect() + ")"
		} else if s.Scenario.Teeth {
			verdict = "pass (control has teeth)"
		}
		i6 := "n/a"
		if len(r.Lags) > 0 {
			i6 = fmt.Sprintf("%s/%s/%s (%d of %d)", ms(check.Percentile(r.Lags, .5)), ms(check.Percentile(r.Lags, .99)), ms(maxDur(r.Lags)), r.Late, len(r.Lags))
		} else if r.Late > 0 {
			i6 = fmt.Sprintf("late %d", r.Late)
		}
		if r.Excluded > 0 {
			i6 += fmt.Sprintf(", %d stopped", r.Excluded)
		}
		i7 := fmt.Sprintf("%.0f (%d)", float64(maxDur(r.Recoveries))/float64(time.Millisecond), r.Slow)
		fmt.Fprintf(&b, "| %d | %s | %s | %d/%d/%d/%d | %d | %s | %d / %d | %d | %d / %d (%d) | %s | %s | %s | %s |\n",
			s.Scenario.ID, name, s.Mode.Name, r.Grants.Attempted, r.Grants.OK, r.Grants.Failed, r.Grants.Unknown, r.Faults,
			i1, r.StaleFenced, r.StaleControl, r.TokenInversions, r.LostFenced, r.LostControl, r.AckFenced, r.Linearizable,
			i6, i7, verdict)
	}
	if q := queueMarkdown(outs); q != "" {
		b.WriteString("\n" + q)
	}
	if q := electMarkdown(outs); q != "" {
		b.WriteString("\n" + q)
	}
	return b.String()
}

// queueMarkdown renders the queue checks of the queue runs (I8, I9), with
// the first fair-order violations of each run.
func queueMarkdown(outs []*Outcome) string {
	var b strings.Builder
	for _, o := range outs {
		if !o.Spec.Scenario.Queue {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| # | scenario | control | waiting calls | grants ok | faults | I8 out of order / pairs compared (excluded) | I9 longest free while waiting ms (over bound) | I7 recovery max ms (slow) | verdict |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		}
		r, s := o.Result, o.Spec
		ctl := "-"
		if s.Control != NoControl {
			ctl = "**NC: " + string(s.Control) + "**"
		}
		verdict := "pass"
		if len(o.Problems) > 0 {
			verdict = "**FAIL**: " + strings.Join(o.Problems, "; ")
		} else if s.Control != NoControl {
			verdict = "pass (detected: " + s.Control.Expect() + ")"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %d | %d | %d / %d (%d) | %s (%d) | %.0f (%d) | %s |\n",
			s.Scenario.ID, s.Scenario.Key, ctl, r.Calls, r.Grants.OK, r.Faults, len(r.OutOfOrder), r.OrderPairs, r.OrderExcluded,
			ms(r.LongestFree), r.FreeOver, float64(maxDur(r.Recoveries))/float64(time.Millisecond), r.Slow, verdict)
	}
	return b.String()
}

// OrderDetails lists an outcome's first n fair-order violations.
func OrderDetails(o *Outcome, n int) string {
	var b strings.Builder
	for i, v := range o.Result.OutOfOrder {
		if i == n {
			fmt.Fprintf(&b, "  ... and %d more\n", len(o.Result.OutOfOrder)-n)
			break
		}
		fmt.Fprintf(&b, "  %s (started %v earlier) still waited when %s was granted (%v after its start)\n",
			v.Earlier.Client, v.Lead.Round(time.Millisecond), v.Later.Client, time.Duration(v.Later.Complete-v.Later.Invoke).Round(time.Millisecond))
	}
	return b.String()
}

// Legend renders the scenario list: what each injects and what it claims.
func Legend() string {
	var b strings.Builder
	b.WriteString("| # | fault class | injection | I1 claimed (single / redlock) | control must show a violation |\n|---|---|---|---|---|\n")
	yn := func(ok, applies bool) string {
		switch {
		case !applies:
			return "n/a"
		case ok:
			return "yes"
		}
		return "no"
	}
	for _, s := range Scenarios {
		teeth := ""
		if s.Teeth {
			teeth = "yes"
		}
		claimed := yn(s.Excludes(Single), s.Single) + " / " + yn(s.Excludes(Redlock), s.Redlock)
		if s.Backend != "" || s.Sentinel {
			claimed = s.Mode().Name + ": " + yn(s.Excludes(s.Mode()), true)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", s.ID, s.Title, s.Schedule, claimed, teeth)
	}
	return b.String()
}

// Versions lists the versions the lab ran with.
func Versions() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Go %s, %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(string(out)))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/redis/go-redis/v9", "github.com/Shopify/toxiproxy/v2", "github.com/anishathalye/porcupine", "github.com/go-zookeeper/zk":
				fmt.Fprintf(&b, "- %s %s\n", d.Path, d.Version)
			}
		}
	}
	return b.String()
}
