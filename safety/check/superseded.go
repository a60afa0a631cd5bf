package check

import "github.com/distlock/distlock/safety/history"

// superseded counts the fenced resource's accepted applies of a grant
// after the resource had answered (accepted or refused) an apply of a
// later grant, one invoked after the first grant completed (I2's other
// face: a stale holder's write accepted because the newer holder's token
// was below it, as a failover that sets tokens back makes them). While
// tokens follow the order of grants (I3) and the resource checks them, the
// later grant's apply raised the resource's mark above the earlier
// grant's token (or found it higher still), and this is 0.
func superseded(h *hist) int {
	var answered, accepted []history.Event
	for _, e := range h.applies[history.Fenced] {
		if e.Result == history.Accepted || e.Result == history.Rejected {
			answered = append(answered, e)
		}
		if e.Result == history.Accepted {
			accepted = append(accepted, e)
		}
	}
	n := 0
	for _, a := range accepted {
		ga := h.byOwner[a.Owner]
		if ga == nil {
			continue
		}
		for _, b := range answered {
			if gb := h.byOwner[b.Owner]; gb != nil && gb.Invoke > ga.Complete && b.Complete < a.Invoke {
				n++
				break
			}
		}
	}
	return n
}

// refusedNewer counts the fenced resource's refusals of an apply of a grant
// whose token was at most that of an apply accepted before it of an
// earlier grant (one that completed before it was invoked): the resource
// refusing the newer holder because its token is not above an older
// holder's (I3 broken, seen where it hurts). While tokens follow the order
// of grants, this is 0.
func refusedNewer(h *hist) int {
	var accepted []history.Event
	for _, e := range h.applies[history.Fenced] {
		if e.Result == history.Accepted {
			accepted = append(accepted, e)
		}
	}
	n := 0
	for _, b := range h.applies[history.Fenced] {
		gb := h.byOwner[b.Owner]
		if b.Result != history.Rejected || gb == nil {
			continue
		}
		for _, a := range accepted {
			if ga := h.byOwner[a.Owner]; ga != nil && ga.Complete < gb.Invoke && a.Complete < b.Invoke && a.Token >= b.Token {
				n++
				break
			}
		}
	}
	return n
}
