package check

import "github.com/distlock/distlock/safety/history"

// lost counts the acknowledged adds of resource res and those missing from
// its final set (I4). Without a final state none is counted missing: Run
// then marks the fenced resource's I4 as unjudged.
func lost(h *hist, res string) (acked, missing int) {
	final, ok := h.final[res]
	in := make(map[string]bool, len(final.Set))
	for _, el := range final.Set {
		in[el] = true
	}
	for _, e := range h.applies[res] {
		if e.Kind != history.KindWrite || e.Result != history.Accepted || e.Add == "" {
			continue
		}
		acked++
		if ok && !in[e.Add] {
			missing++
		}
	}
	return acked, missing
}
