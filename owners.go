package distlock

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
)

// owners makes a Client's random owner tokens and attempt ids: 128 bits
// in hex (never looks like a command-line flag) from a ChaCha8 stream seeded
// from crypto/rand, so that unguessable
// unique tokens cost no system call each.
type owners struct {
	mu  sync.Mutex
	src *rand.ChaCha8
}

func newOwners() *owners {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &owners{src: rand.NewChaCha8(seed)}
}

// next returns a fresh token, never handed out before by any Client (with
// the probability of a 128-bit collision).
func (o *owners) next() string {
	var b [16]byte
	o.mu.Lock()
	_, _ = o.src.Read(b[:])
	o.mu.Unlock()
	return hex.EncodeToString(b[:])
}
