package rules

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
)

// Owners mints random owner tokens and attempt ids: 128 bits in hex
// (never looks like a command-line flag) from a ChaCha8 stream seeded from
// crypto/rand, so that unguessable unique tokens cost no system call each.
// The Client and the server each keep one. It is safe for concurrent use.
type Owners struct {
	mu  sync.Mutex
	src *rand.ChaCha8
}

// NewOwners returns an Owners seeded from crypto/rand.
func NewOwners() *Owners {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &Owners{src: rand.NewChaCha8(seed)}
}

// Next returns a fresh token, 32 lowercase hex digits, never handed out
// before by any Owners (with the probability of a 128-bit collision).
func (o *Owners) Next() string {
	var b [16]byte
	o.mu.Lock()
	_, _ = o.src.Read(b[:])
	o.mu.Unlock()
	return hex.EncodeToString(b[:])
}
