package engine

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest lock name accepted, in bytes.
const MaxNameLen = 512

// ValidateName checks a lock name with the one rule every engine keeps, so
// that a name one engine takes, every engine takes: 1 to MaxNameLen bytes
// of UTF-8, without a NUL byte (PostgreSQL's text cannot hold one), not
// starting with '}' (a lock's Redis keys are prefix{name}..., and Redis
// Cluster hashes only what lies between the first '{' and the first '}'
// after it: a leading '}' would empty the hash tag and scatter the lock's
// keys over several slots). It returns an *ArgumentError, or nil.
func ValidateName(name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "empty"
	case len(name) > MaxNameLen:
		reason = "longer than " + strconv.Itoa(MaxNameLen) + " bytes"
	case !utf8.ValidString(name):
		reason = "not valid UTF-8"
	case strings.IndexByte(name, 0) >= 0:
		reason = "contains a NUL byte"
	case name[0] == '}':
		reason = "must not start with '}' (it would empty the Redis Cluster hash tag of the lock's keys)"
	default:
		return nil
	}
	return &ArgumentError{Arg: "name", Reason: reason}
}
