package check

import "sort"

// SharedViolation is one violation of I12 or I13: at At (the start of a
// grant's validity window) the grants in Holders held their windows at
// once, with Held permits in all (weights counted).
type SharedViolation struct {
	At      int64
	Held    int
	Holders []Grant
}

// sharedChecks runs I12 (limit > 0: never more than limit permits held at
// once, weights counted) and I13 (never a writer's window together with
// any other window) over the grants' validity windows (the windows of I1:
// from the grant's reply to the first of release called, loss signalled,
// last known deadline). A grant without a weight counts 1.
func sharedChecks(h *hist, limit int) (over, writers []SharedViolation, maxHeld int) {
	type iv struct {
		g        *Grant
		from, to int64
	}
	var all []iv
	for _, g := range h.grants {
		for _, x := range g.Intervals {
			if x[1] > x[0] {
				all = append(all, iv{g, x[0], x[1]})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].from < all[j].from })
	weight := func(g *Grant) int { return max(g.Weight, 1) }
	var active []iv
	for _, x := range all {
		kept := active[:0]
		for _, a := range active {
			if a.to > x.from {
				kept = append(kept, a)
			}
		}
		active = kept
		// One window per grant (a grant's own renewal intervals overlap).
		seen := map[*Grant]bool{x.g: true}
		held := weight(x.g)
		holders := []Grant{*x.g}
		writer := x.g.Access == "write"
		for _, a := range active {
			if seen[a.g] {
				continue
			}
			seen[a.g] = true
			held += weight(a.g)
			holders = append(holders, *a.g)
			writer = writer || a.g.Access == "write"
		}
		maxHeld = max(maxHeld, held)
		if limit > 0 && held > limit {
			over = append(over, SharedViolation{At: x.from, Held: held, Holders: holders})
		}
		if writer && len(holders) > 1 {
			writers = append(writers, SharedViolation{At: x.from, Held: held, Holders: holders})
		}
		active = append(active, x)
	}
	return over, writers, maxHeld
}
