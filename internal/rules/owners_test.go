package rules

import (
	"sync"
	"testing"
)

// TestOwners checks that tokens are 32 lowercase hex digits and unique,
// across goroutines and across two Owners (two Clients, or a Client and a
// server).
func TestOwners(t *testing.T) {
	a, b := NewOwners(), NewOwners()
	const n = 1000
	var mu sync.Mutex
	seen := make(map[string]bool, 2*n)
	var wg sync.WaitGroup
	for _, o := range []*Owners{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				tok := o.Next()
				mu.Lock()
				if seen[tok] {
					t.Errorf("token %s minted twice", tok)
				}
				seen[tok] = true
				mu.Unlock()
				if len(tok) != 32 {
					t.Errorf("token %q: %d characters, want 32", tok, len(tok))
				}
				for _, r := range tok {
					if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
						t.Errorf("token %q: not lowercase hex", tok)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
}
