package check

import (
	"time"

	"github.com/distlock/distlock/safety/client"
)

// signals measures loss-signal lags of library leases (I6; and of its
// negative control's, the library's lease told late): the signal time
// minus the local deadline the lease had. A lease whose holder found it
// still valid after its deadline (a "checked" event past it) counts as late
// too. Holders stopped by SIGSTOP around the deadline are excluded: a
// stopped process cannot be told anything (classes 1, 13 and 14: a waiter
// stopped as the head may have been granted just before).
func signals(h *hist, p Params) (lags []time.Duration, late, excluded int) {
	limit := Drift(p.TTL) + p.SignalTolerance
	stopped := func(cl string, from, to int64) bool {
		for _, f := range h.faults {
			if stopsClient(f.Class) && f.Target == cl && f.Start <= to && f.End >= from {
				return true
			}
		}
		return false
	}
	library := func(owner string) bool {
		g := h.byOwner[owner]
		return g != nil && (g.Impl == client.ImplLibrary || g.Impl == "" || g.Impl == client.ImplLateLoss)
	}
	for _, e := range h.losses {
		if !library(e.Owner) {
			continue
		}
		if stopped(e.Client, e.Deadline-int64(p.TTL), e.At) {
			excluded++
			continue
		}
		lag := time.Duration(e.At - e.Deadline)
		lags = append(lags, lag)
		if lag > limit {
			late++
		}
	}
	for _, e := range h.checked {
		if !library(e.Owner) || e.At <= e.Deadline+int64(limit) {
			continue
		}
		if stopped(e.Client, e.Deadline-int64(p.TTL), e.At) {
			excluded++
			continue
		}
		late++
	}
	return lags, late, excluded
}

// Percentile returns the q-quantile (0..1) of ds (nearest rank), or 0.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sortDurations(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(max(i, 0), len(s)-1)]
}

func sortDurations(s []time.Duration) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
