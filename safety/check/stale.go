package check

import (
	"sort"
	"strconv"
	"strings"

	"github.com/distlock/distlock/safety/history"
)

// stale counts stale applies that were accepted (I2): an apply is stale when
// an apply with a higher token (or the same token from another holder) had
// been accepted before it was invoked. On the fenced resource every fenced
// read and write raises the mark; on the control only writes count (it has
// no mark: these are stale writes that landed). Inversions of token order in
// the final set count too.
func stale(h *hist) (fenced, control int) {
	fenced = staleApplies(h.applies[history.Fenced], true) + finalInversions(h.final[history.Fenced])
	control = staleApplies(h.applies[history.Control], false) + finalInversions(h.final[history.Control])
	return fenced, control
}

func staleApplies(evs []history.Event, reads bool) int {
	var acc []history.Event
	for _, e := range evs {
		if e.Result == history.Accepted && (reads || e.Kind == history.KindWrite) {
			acc = append(acc, e)
		}
	}
	byInvoke := append([]history.Event(nil), acc...)
	sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].Invoke < byInvoke[j].Invoke })
	byComplete := append([]history.Event(nil), acc...)
	sort.Slice(byComplete, func(i, j int) bool { return byComplete[i].Complete < byComplete[j].Complete })
	var hw uint64
	var holder string
	n, k := 0, 0
	for _, e := range byInvoke {
		for ; k < len(byComplete) && byComplete[k].Complete < e.Invoke; k++ {
			if c := byComplete[k]; c.Token > hw {
				hw, holder = c.Token, c.Owner
			}
		}
		if e.Token < hw || (e.Token == hw && e.Owner != holder) {
			n++
		}
	}
	return n
}

// finalInversions counts adjacent elements of a final set whose tokens
// decrease ("token:client-seq").
func finalInversions(e history.Event) int {
	n := 0
	var prev uint64
	for _, el := range e.Set {
		tok, _, _ := strings.Cut(el, ":")
		t, err := strconv.ParseUint(tok, 10, 64)
		if err != nil {
			continue
		}
		if t < prev {
			n++
		}
		prev = t
	}
	return n
}
