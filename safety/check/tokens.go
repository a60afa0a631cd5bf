package check

import "sort"

// tokenInversions counts grants whose token is not above the token of every
// grant that completed before it was invoked (I3).
func tokenInversions(h *hist) int {
	byInvoke := append([]*Grant(nil), h.grants...)
	sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	n, k := 0, 0
	var hw uint64
	for _, g := range byInvoke {
		for ; k < len(h.grants) && h.grants[k].Complete < g.Invoke; k++ {
			hw = max(hw, h.grants[k].Token)
		}
		if g.Token <= hw {
			n++
		}
	}
	return n
}
