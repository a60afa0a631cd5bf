package redis

import (
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock/engine"
)

// parseNotice reads the state an election's message on a lock's channel
// carries: 'L <token> <pttl ms> <value>' (acquire.lua's announced
// grant and set_metadata.lua: the holder, its value and its ttl left when the
// script ran) or 'E <token>' (queue.lua's q_freed: the term ended). Any
// other message ('released' from a script that knew no token, a wake-up
// addressed to a waiter) carries no state: ok false.
func parseNotice(payload string) (n engine.Notice, ok bool) {
	kind, rest, found := strings.Cut(payload, " ")
	if !found || (kind != "L" && kind != "E") {
		return n, false
	}
	if kind == "E" {
		t, err := strconv.ParseUint(rest, 10, 64)
		return engine.Notice{Token: t}, err == nil && t != 0
	}
	tok, rest, _ := strings.Cut(rest, " ")
	ms, value, found := strings.Cut(rest, " ")
	t, err1 := strconv.ParseUint(tok, 10, 64)
	pttl, err2 := strconv.ParseInt(ms, 10, 64)
	if !found || err1 != nil || err2 != nil || t == 0 || value == "" {
		return n, false
	}
	return engine.Notice{Held: true, Token: t, Metadata: value, TTL: time.Duration(pttl) * time.Millisecond}, true
}
