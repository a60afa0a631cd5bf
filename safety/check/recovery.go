package check

import (
	"sort"
	"time"
)

// recoveries measures, after each heal (the end of a period with at least
// one fault active), how long the lock took to be granted again beyond the
// end of the leases legitimately held at the heal (I7).
func recoveries(h *hist, p Params) (rec []time.Duration, slow, unchecked int) {
	bound := int64(p.TTL + p.Backoff)
	if p.RecoveryBound > 0 {
		bound = int64(p.RecoveryBound)
	}
	var ivs [][2]int64
	for _, f := range h.faults {
		ivs = append(ivs, [2]int64{f.Start, max(f.End, f.Start)})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i][0] < ivs[j][0] })
	var heals []int64
	for i := 0; i < len(ivs); {
		end := ivs[i][1]
		j := i + 1
		for ; j < len(ivs) && ivs[j][0] <= end; j++ {
			end = max(end, ivs[j][1])
		}
		heals = append(heals, end)
		i = j
	}
	for _, heal := range heals {
		t0 := heal
		for _, g := range h.grants {
			if g.Complete <= heal && g.End > heal {
				t0 = max(t0, g.End)
			}
		}
		i := sort.Search(len(h.grants), func(i int) bool { return h.grants[i].Complete > heal })
		if i == len(h.grants) {
			if h.runEnd-t0 > bound {
				slow++
				rec = append(rec, time.Duration(h.runEnd-t0))
			} else {
				unchecked++
			}
			continue
		}
		d := time.Duration(max(h.grants[i].Complete-t0, 0))
		rec = append(rec, d)
		if int64(d) > bound {
			slow++
		}
	}
	return rec, slow, unchecked
}
