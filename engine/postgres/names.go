package postgres

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/distlock/distlock/engine"
)

// checkText refuses a text argument PostgreSQL cannot store: a NUL byte,
// or bytes that are not UTF-8 (the database is UTF8; sent, they fail
// with SQLSTATE 22021, a backend error to the caller). Every name, owner
// and value distlock makes is UTF-8 (engine.ValidateName); a prefix or a
// cursor of a listing, or a name given to an admin call, may not be.
func checkText(arg, s string) error {
	if containsNUL(s) {
		return &engine.ArgumentError{Arg: arg, Reason: "contains a NUL byte, which PostgreSQL text cannot hold"}
	}
	if !utf8.ValidString(s) {
		return &engine.ArgumentError{Arg: arg, Reason: "not valid UTF-8, which PostgreSQL text (UTF8) cannot hold"}
	}
	return nil
}

// pageLimit is a page's limit (at least 1) as the int4 the statements
// take: one beyond it is as good as no limit, and is not cut to 32 bits
// (2^32 was LIMIT 0, an empty last page).
func pageLimit(limit int) int32 {
	return int32(min(max(limit, 1), math.MaxInt32))
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
