package fence

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/distlock/distlock/engine"
)

// ErrStale is matched (with errors.Is) by every *StaleError: a write was
// rejected because its fencing token is older than one already accepted for
// the resource, or equal to it but from another holder.
var ErrStale = errors.New("fence: stale fencing token")

// ErrInvalidArgument is wrapped by the errors returned for bad input: an empty
// resource, key or holder, the token 0 or a token above engine.MaxToken
// (2^53-1; distlock mints neither), a missing write function or command, a
// key the guard keeps for itself (Redis.Exec). Nothing is checked, run or
// recorded then.
var ErrInvalidArgument = errors.New("fence: invalid argument")

// StaleError reports a write that a guard rejected. The write did not run and
// the guard's state is unchanged. Use errors.As to get it and errors.Is(err,
// ErrStale) to test for it.
type StaleError struct {
	// Resource names what the write was for: the resource given to Guard
	// or ExecFenced, or the fence key given to Redis.
	Resource string
	// Token is the rejected fencing token.
	Token uint64
	// Highest is the highest token accepted for Resource so far. It equals
	// Token when the token was used already by another holder. It is 0 when
	// the guard cannot tell (ExecFenced).
	Highest uint64
	// Holder is the holder that tried to write with Token. It is empty when
	// the guard was not told (ExecFenced).
	Holder string
}

// Error describes the rejected write.
func (e *StaleError) Error() string {
	var b strings.Builder
	b.WriteString("fence: stale fencing token ")
	b.WriteString(strconv.FormatUint(e.Token, 10))
	fmt.Fprintf(&b, " for %q", e.Resource)
	if e.Holder != "" {
		fmt.Fprintf(&b, " from holder %q", e.Holder)
	}
	switch {
	case e.Highest == 0:
	case e.Highest == e.Token:
		b.WriteString(": token already used by another holder")
	default:
		b.WriteString(": highest accepted is ")
		b.WriteString(strconv.FormatUint(e.Highest, 10))
	}
	return b.String()
}

// Is reports whether target is ErrStale, so that errors.Is(err, ErrStale)
// holds for every *StaleError.
func (e *StaleError) Is(target error) bool {
	return target == ErrStale
}

// invalid returns an error that wraps ErrInvalidArgument.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// ValidateWrite checks the arguments every guard takes for a write: a
// resource (or fence key), a fencing token and the holder writing. It returns
// an error wrapping ErrInvalidArgument for an empty resource or holder, the
// token 0 or a token above engine.MaxToken (2^53-1): distlock mints neither,
// and a guard that recorded such a token would refuse every real holder of
// the resource from then on. It returns nil otherwise. Every guard here uses
// it, and a guard of another package can, so that bad input is refused
// alike.
func ValidateWrite(resource string, token uint64, holder string) error {
	switch {
	case resource == "":
		return invalid("empty resource")
	case holder == "":
		return invalid("empty holder for %q", resource)
	}
	return checkToken(resource, token)
}

// checkToken refuses, with an error wrapping ErrInvalidArgument, a token no
// distlock grant carries: 0, or one above engine.MaxToken (2^53-1).
func checkToken(resource string, token uint64) error {
	switch {
	case token == 0:
		return invalid("fencing token 0 for %q", resource)
	case token > engine.MaxToken:
		return invalid("fencing token %d for %q is above 2^53-1, the largest token a grant carries", token, resource)
	}
	return nil
}
