package main

import (
	"fmt"
	"math"
	"strings"
)

// values returns one figure of a variant's records, by run (NaN where a
// run lacks it).
func (r *results) values(scenario, variant, key string) []float64 {
	var out []float64
	for _, rec := range r.get(scenario, variant) {
		v, ok := rec.Metrics[key]
		if !ok || rec.Hung {
			v = math.NaN()
		}
		out = append(out, v)
	}
	return out
}

// median returns the median of one figure over a variant's runs.
func (r *results) median(scenario, variant, key string) float64 {
	return summarize(r.values(scenario, variant, key)).med
}

// ratio summarizes, over the runs, ref's figure divided by row's figure
// from the same run.
func (r *results) ratio(scenario, ref, row, key string) summary {
	a, b := r.values(scenario, ref, key), r.values(scenario, row, key)
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, a[i]/b[i])
	}
	return summarize(rs)
}

// best returns the variant of the given kind whose median figure is the
// lowest (lower) or the highest, and that median.
func (r *results) best(scenario, kind, key string, lower bool) (string, float64) {
	name, bestV := "", math.NaN()
	for _, v := range r.order[scenario] {
		recs := r.get(scenario, v)
		if len(recs) == 0 || recs[0].Kind != kind {
			continue
		}
		m := r.median(scenario, v, key)
		if math.IsNaN(m) {
			continue
		}
		if name == "" || (lower && m < bestV) || (!lower && m > bestV) {
			name, bestV = v, m
		}
	}
	return name, bestV
}

// hung reports whether any run of the variant hung.
func (r *results) hung(scenario, variant string) (hung, runs int) {
	for _, rec := range r.get(scenario, variant) {
		runs++
		if rec.Hung {
			hung++
		}
	}
	return hung, runs
}

// fmtSummary renders a summary as "median (min–max)".
func fmtSummary(s summary, digits int) string {
	if math.IsNaN(s.med) {
		return "n/a"
	}
	if s.n <= 1 || s.min == s.max {
		return fmtNum(s.med, digits)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtNum(s.med, digits), fmtNum(s.min, digits), fmtNum(s.max, digits))
}

// fmtNum renders v with digits decimals and thousands separators.
func fmtNum(v float64, digits int) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "n/a"
	}
	s := fmt.Sprintf("%.*f", digits, v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// table renders a scenario's table in Markdown.
func table(sc scenario, res *results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: %s\n\n", sc.id, sc.title)
	if sc.about != "" {
		b.WriteString(sc.about + "\n\n")
	}
	heads := []string{"library", "settings"}
	for _, c := range sc.columns {
		heads = append(heads, c.head)
	}
	for _, rc := range sc.ratios {
		heads = append(heads, rc.head)
	}
	b.WriteString("| " + strings.Join(heads, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(heads)) + "\n")
	for _, v := range res.order[sc.id] {
		recs := res.get(sc.id, v)
		row := []string{v, recs[0].Settings}
		h, runs := res.hung(sc.id, v)
		for _, c := range sc.columns {
			if c.custom != nil {
				row = append(row, c.custom(res, v))
				continue
			}
			s := fmtSummary(summarize(res.values(sc.id, v, c.key)), c.digits)
			switch {
			case h == runs:
				s = "hangs"
			case h > 0:
				s += fmt.Sprintf(" (hung %d/%d)", h, runs)
			}
			row = append(row, s)
		}
		for _, rc := range sc.ratios {
			if h == runs {
				row = append(row, "-")
				continue
			}
			row = append(row, fmtSummary(res.ratio(sc.id, rc.ref, v, rc.key), 2))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
	var errs []string
	for _, v := range res.order[sc.id] {
		for _, rec := range res.get(sc.id, v) {
			if rec.Error != "" {
				errs = append(errs, fmt.Sprintf("%s, run %d: %s", v, rec.Run, oneLine(rec.Error)))
				break
			}
		}
	}
	if len(errs) > 0 {
		b.WriteString("Errors seen (first per row):\n\n")
		for _, e := range errs {
			b.WriteString("- " + e + "\n")
		}
		b.WriteString("\n")
	}
	if sc.verdict != nil {
		lines := sc.verdict(res)
		if len(lines) > 0 {
			b.WriteString("Targets:\n\n")
			for _, l := range lines {
				b.WriteString("- " + l + "\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// oneLine shortens an error message for a table note.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// met renders a target verdict.
func met(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**MISSED**"
}

// ratioLine is a target line about a per-run ratio against a bound.
func ratioLine(what string, s summary, bound float64, atMost bool) string {
	if math.IsNaN(s.med) {
		return what + ": not measured in this run"
	}
	ok := s.med <= bound
	rel := "≤"
	if !atMost {
		ok = s.med >= bound
		rel = "≥"
	}
	return fmt.Sprintf("%s: %s (target %s %s) → %s", what, fmtSummary(s, 2), rel, fmtNum(bound, 2), met(ok))
}
