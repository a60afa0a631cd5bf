package check

import (
	"sort"
	"time"
)

// overlaps finds pairs of grants whose validity intervals intersect (I1).
func overlaps(h *hist) []Overlap {
	type iv struct {
		g        *Grant
		from, to int64
	}
	var all []iv
	for _, g := range h.grants {
		for _, x := range g.Intervals {
			all = append(all, iv{g, x[0], x[1]})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].from < all[j].from })
	type pair struct{ a, b *Grant }
	found := map[pair]int64{}
	var order []pair
	var active []iv
	for _, x := range all {
		kept := active[:0]
		for _, a := range active {
			if a.to > x.from {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			if a.g == x.g {
				continue
			}
			d := min(a.to, x.to) - x.from
			p := pair{a.g, x.g}
			if _, ok := found[p]; !ok {
				order = append(order, p)
			}
			found[p] = max(found[p], d)
		}
		active = append(active, x)
	}
	out := make([]Overlap, 0, len(order))
	for _, p := range order {
		out = append(out, Overlap{A: *p.a, B: *p.b, Duration: time.Duration(found[p])})
	}
	return out
}
