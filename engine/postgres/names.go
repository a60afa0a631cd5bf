package postgres

import (
	"strings"

	"github.com/distlock/distlock/engine"
)

// checkText refuses a text argument PostgreSQL cannot store.
func checkText(arg, s string) error {
	if containsNUL(s) {
		return &engine.ArgumentError{Arg: arg, Reason: "contains a NUL byte, which PostgreSQL text cannot hold"}
	}
	return nil
}

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// checkTexts checks several text arguments, as pairs of (arg, value).
func checkTexts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := checkText(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
