package postgres

import (
	"sync/atomic"
	"time"
)

// signatures tells which signature of a schema function an engine calls:
// the current one, or an older schema's when the current one was missing.
// A call that meets "function does not exist" ran nothing (its statement,
// its own transaction, rolled back) and is made again with the other
// signature: on an older schema, the older one, which the engine then
// calls first (for good, or for recheck); on a schema a Migrate brought up
// to date meanwhile, the current one. At most once each.
type signatures struct {
	// until is when the engine stops calling the older signatures (Unix
	// ns); 0: it calls the current ones.
	until atomic.Int64
	// recheck is how long the engine calls the older signatures before it
	// tries the current ones again; 0: for good.
	recheck time.Duration
}

// old reports whether the engine calls the older signatures now.
func (s *signatures) old() bool {
	until := s.until.Load()
	return until != 0 && (s.recheck == 0 || time.Now().UnixNano() < until)
}

// call runs the call of the signature in use (current, or older while the
// engine calls the older signatures), and the other's while it meets a
// missing function.
func (s *signatures) call(current, older func() error) error {
	var err error
	for try := 0; try < 3; try++ {
		old := s.old()
		if old {
			err = older()
		} else {
			err = current()
		}
		if !undefinedFunction(err) {
			return err
		}
		if old {
			s.until.Store(0)
		} else {
			s.until.Store(time.Now().Add(s.recheck).UnixNano())
		}
	}
	return err
}
