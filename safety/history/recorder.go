package history

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
)

// Recorder collects the events of one run: it keeps them in memory for the
// checker, appends them as JSON lines to a writer, and hands them to
// watchers (the fault scheduler reacts to what clients do). It is safe for
// concurrent use.
type Recorder struct {
	mu       sync.Mutex
	events   []Event
	w        *bufio.Writer
	enc      *json.Encoder
	err      error
	watchers []*watcher
	taps     []func(Event)
}

type watcher struct {
	match func(Event) bool
	ch    chan Event
}

// NewRecorder returns a Recorder that also writes to w (nil: memory only).
func NewRecorder(w io.Writer) *Recorder {
	r := &Recorder{}
	if w != nil {
		r.w = bufio.NewWriter(w)
		r.enc = json.NewEncoder(r.w)
	}
	return r
}

// Add records e.
func (r *Recorder) Add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.enc != nil && r.err == nil {
		r.err = r.enc.Encode(e)
	}
	for _, t := range r.taps {
		t(e)
	}
	kept := r.watchers[:0]
	for _, w := range r.watchers {
		if w.match(e) {
			w.ch <- e // buffered, one event per watcher
			continue
		}
		kept = append(kept, w)
	}
	clear(r.watchers[len(kept):])
	r.watchers = kept
}

// Watch returns a channel that receives the first event recorded from now
// on for which match returns true. match runs under the Recorder's lock: it
// must be quick and must not call the Recorder.
func (r *Recorder) Watch(match func(Event) bool) <-chan Event {
	w := &watcher{match: match, ch: make(chan Event, 1)}
	r.mu.Lock()
	r.watchers = append(r.watchers, w)
	r.mu.Unlock()
	return w.ch
}

// Tap calls f with every event recorded from now on, in order. f runs
// under the Recorder's lock: it must be quick and must not call the
// Recorder.
func (r *Recorder) Tap(f func(Event)) {
	r.mu.Lock()
	r.taps = append(r.taps, f)
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Flush writes buffered lines and returns the first write error, if any.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil && r.err == nil {
		r.err = r.w.Flush()
	}
	return r.err
}
