package fence

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Predicate returns the SQL condition that accepts a fenced write, for a row
// that keeps its high-water mark in its own columns: tokenColumn holds the
// highest token written (BIGINT NOT NULL, initially 0) and holderColumn the
// holder that wrote it (NOT NULL, initially the empty string); with NULL in
// them the condition is never true. For example
//
//	Predicate("fence_token", "fence_holder", "$2", "$3") ==
//	"(fence_token < $2 OR (fence_token = $2 AND fence_holder = $3))"
//
// The UPDATE must also set both columns to the new token and holder; see
// ExecFenced. With positional "?" placeholders the token placeholder appears
// twice, so the token must be passed twice.
//
// The columns must be identifiers (see ValidIdentifier) and the placeholders
// one of "?", "?N", "$N", ":N", ":name", "@name" or "$name" (see
// ValidPlaceholder). They are meant to be constants in the program, so
// Predicate panics on anything else, as regexp.MustCompile does; check
// dynamic names with ValidIdentifier and ValidPlaceholder first.
func Predicate(tokenColumn, holderColumn, tokenPlaceholder, holderPlaceholder string) string {
	for _, c := range []string{tokenColumn, holderColumn} {
		if !ValidIdentifier(c) {
			panic(fmt.Sprintf("fence: Predicate: invalid column name %q", c))
		}
	}
	for _, p := range []string{tokenPlaceholder, holderPlaceholder} {
		if !ValidPlaceholder(p) {
			panic(fmt.Sprintf("fence: Predicate: invalid placeholder %q", p))
		}
	}
	return "(" + tokenColumn + " < " + tokenPlaceholder +
		" OR (" + tokenColumn + " = " + tokenPlaceholder +
		" AND " + holderColumn + " = " + holderPlaceholder + "))"
}

// ValidIdentifier reports whether s is a plain SQL identifier that Predicate
// accepts as a column name: one or more dot-separated parts, each a letter or
// underscore followed by letters, digits or underscores (ASCII), as in
// "fence_token" or "accounts.fence_token". Quoted identifiers are not
// accepted.
func ValidIdentifier(s string) bool {
	start := true // at the start of a part
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if start {
				return false
			}
			start = true
			continue
		case isLetter(c):
		case isDigit(c):
			if start {
				return false
			}
		default:
			return false
		}
		start = false
	}
	return !start
}

// ValidPlaceholder reports whether s is a bind parameter that Predicate
// accepts: "?", "?N", "$N" or ":N" with N decimal digits, or ":name", "@name"
// or "$name" with name an identifier without dots.
func ValidPlaceholder(s string) bool {
	if s == "?" {
		return true
	}
	if len(s) < 2 {
		return false
	}
	rest := s[1:]
	switch s[0] {
	case '?':
		return allDigits(rest)
	case '$', ':':
		return allDigits(rest) || (ValidIdentifier(rest) && !containsDot(rest))
	case '@':
		return ValidIdentifier(rest) && !containsDot(rest)
	}
	return false
}

// isLetter reports whether c may start an identifier part.
func isLetter(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// containsDot reports whether s contains a '.'.
func containsDot(s string) bool { return strings.IndexByte(s, '.') >= 0 }

// Execer is implemented by *sql.DB, *sql.Tx and *sql.Conn.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ExecFenced runs a fenced UPDATE (which must contain the predicate and set
// the token/holder columns) and turns "0 rows affected" into
// *StaleError{Resource: resource, Token: token}. The token and holder are
// passed in args like any other value; token is used only for the error.
// resource names the row in errors.
//
// For example, with PostgreSQL:
//
//	q := "UPDATE accounts SET balance = $1, fence_token = $2, fence_holder = $3" +
//		" WHERE id = $4 AND " + Predicate("fence_token", "fence_holder", "$2", "$3")
//	err := ExecFenced(ctx, db, "accounts/42", token, q, balance, int64(token), holder, 42)
//
// A missing row also affects 0 rows: insert the row (with token 0) before
// the first fenced write, or it is reported as stale. On MySQL, rows
// affected counts changed rows only, so a repeated identical write by the
// same holder would look stale: connect with clientFoundRows=true.
//
// Errors from db are returned wrapped; bad input (empty resource, token 0
// or above engine.MaxToken, empty query) is reported with an error wrapping
// ErrInvalidArgument without running the query.
func ExecFenced(ctx context.Context, db Execer, resource string, token uint64, query string, args ...any) error {
	if resource == "" {
		return invalid("empty resource")
	}
	if err := checkToken(resource, token); err != nil {
		return err
	}
	switch {
	case query == "":
		return invalid("empty query for %q", resource)
	case db == nil:
		return invalid("nil database for %q", resource)
	}
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("fence: fenced write for %q: %w", resource, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: fenced write for %q: rows affected: %w", resource, err)
	}
	if n == 0 {
		return &StaleError{Resource: resource, Token: token}
	}
	return nil
}
