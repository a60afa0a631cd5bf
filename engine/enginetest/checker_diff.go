package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// answer is what of an operation's answer (in history h) must not depend on the engine
// when the schedule is run one operation at a time with ttls too long to
// expire: the outcome (grant, contention, kind refusal, argument error,
// unsupported, not held), ForceRelease's answer, and what Inspect and List
// saw (holders with their weights, kind and limit). Tokens are not
// compared (each engine has its own clock-seeded counter); their order is
// judged by the specification on each history.
func answer(e *event, h *history) string {
	s := fmt.Sprintf("%v -> %v", e.Op, e.Out)
	if e.Op.Kind == opForce {
		s += fmt.Sprintf(" held=%v", e.Bool)
	}
	var views []string
	for _, in := range e.Infos {
		var hs []string
		for _, hd := range in.Holders {
			hs = append(hs, fmt.Sprintf("%s:w%d", h.stable(in.Name, hd.Owner), max(hd.Weight, 1))) // a mutex's weight may be left 0
		}
		slices.Sort(hs)
		if len(hs) == 0 {
			continue // an empty view: engines differ in listing free names
		}
		views = append(views, fmt.Sprintf("%s[%s]", in.Name, strings.Join(hs, " ")))
	}
	slices.Sort(views)
	views = slices.Compact(views)
	if len(views) > 0 {
		s += " " + strings.Join(views, " ")
	}
	return s
}

// differ compares the answers of two runs of one sequential schedule and
// returns the first operations where they differ.
func differ(got, want *history) []string {
	var bad []string
	for i := range min(len(got.Events), len(want.Events)) {
		if e := got.Events[i]; e.Out == outOther && errors.Is(e.Err, context.DeadlineExceeded) {
			// An operation that ran out of time (a stalled backend on a
			// loaded machine) may or may not have happened: from here the
			// two runs need not agree, and timing is not what the
			// differential judges. The specification still judges the rest.
			break
		}
		g, w := answer(got.Events[i], got), answer(want.Events[i], want)
		if e := got.Events[i]; e.Op.Kind == opForce && e.Bool && !want.Events[i].Bool {
			// "Some node still held it": a quorum's Release returns once a
			// majority released, and ForceRelease reports any node's hold,
			// so a node a moment behind answers held. A hold that lasts is
			// judged by the specification (views, refusals), not here.
			w = strings.Replace(w, " held=false", " held=true", 1)
		}
		if g != w {
			bad = append(bad, fmt.Sprintf("differential: client %d op %d answered %s; the memory engine %s",
				got.Events[i].Client, got.Events[i].Index, g, w))
			if len(bad) == 3 {
				break
			}
		}
	}
	return bad
}
