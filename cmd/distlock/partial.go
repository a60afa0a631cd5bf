package main

import (
	"fmt"
	"strings"

	"github.com/distlock/distlock/engine"
)

// partialJSON marks a partial answer in JSON output: the Redlock nodes that
// did not answer in time (the answer is the other nodes').
type partialJSON struct {
	Unanswered []string `json:"unanswered"`
}

// toPartialJSON is p's JSON form (nil for a whole answer).
func toPartialJSON(p *engine.PartialError) *partialJSON {
	if p == nil {
		return nil
	}
	return &partialJSON{Unanswered: p.Unanswered}
}

// partialNote says why an answer is partial, and whose it is (printed
// after "partial: ").
func partialNote(p *engine.PartialError) string {
	return fmt.Sprintf("no answer from %s in time; this is what the other nodes answered",
		strings.Join(p.Unanswered, ", "))
}
