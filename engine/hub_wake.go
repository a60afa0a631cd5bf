package engine

// What a Hub's Watcher feeds it: the wake-ups of a name's subscribers.
// A wake-up without a notice makes an observer read the lock (NoticeBox);
// wake-ups coalesce (Signal).

// Wake wakes every subscriber of name.
func (h *Hub) Wake(name string) { h.WakeIf(name, func(string) bool { return true }) }

// WakeWaiter wakes the subscriptions of waiter on name, and no other: ""
// wakes the plain subscriptions.
func (h *Hub) WakeWaiter(name, waiter string) {
	h.WakeIf(name, func(w string) bool { return w == waiter })
}

// WakeIf wakes the subscribers of name whose waiter id ("" for a plain
// subscription) which reports true for; which runs under the Hub's lock.
func (h *Hub) WakeIf(name string, which func(waiter string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.names[name]; n != nil {
		for s := range n.subs {
			if which(s.waiter) {
				s.wake()
			}
		}
	}
}

// Notice wakes the plain subscribers of name (an election's observers)
// with n, the lock's state, which they may report without reading the
// lock.
func (h *Hub) Notice(name string, n Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hn := h.names[name]; hn != nil {
		for s := range hn.subs {
			if s.waiter == "" {
				s.Put(n)
				s.Wake()
			}
		}
	}
}

// WakeAll wakes every subscriber of every name: the transport may have
// missed events (a reconnect), and a missed release must never leave a
// waiter asleep.
func (h *Hub) WakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.names {
		for s := range n.subs {
			s.wake()
		}
	}
}

// Count returns the number of subscriptions to name (Info.Subscribers).
func (h *Hub) Count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.names[name]; n != nil {
		return len(n.subs)
	}
	return 0
}

// wake wakes s without a notice: its observer reads the lock.
func (s *hubSub) wake() {
	s.Doubt()
	s.Wake()
}
