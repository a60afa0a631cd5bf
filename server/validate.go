package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/rules"
	"github.com/distlock/distlock/server/api"
)

// The server validates every request before its engine sees it, with the
// limits of package distlock (engines assume validated input).

// validateName checks a lock name with the rule of every engine
// (engine.ValidateName, which distlock.ValidateName applies too) and the
// engine's own, if any (engine.NameChecker), as a Client does, so the two
// cannot drift.
func (s *Server) validateName(name string) *apiError {
	var ee *engine.ArgumentError
	if err := engine.CheckName(s.eng, name); errors.As(err, &ee) {
		return badRequest("name", "invalid name: "+ee.Reason)
	} else if err != nil {
		return badRequest("name", "invalid name: "+err.Error())
	}
	return nil
}

// ttlFrom turns a ttl_ms field into a ttl: 0 means the default. The rule
// and the fitting to the engine's ttls are rules.FitTTL's, as a Client's,
// and the answer's ttl_ms says what was kept.
func (s *Server) ttlFrom(ms int64) (time.Duration, *apiError) {
	if ms == 0 {
		return engine.CapabilitiesOf(s.eng).FitTTL(distlock.DefaultTTL), nil
	}
	// (Clamped so that an absurd value cannot overflow into a valid one.)
	ttl, err := rules.FitTTL(s.eng, time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond)
	if e := argErr("ttl_ms", err); e != nil {
		return 0, e
	}
	return ttl, nil
}

// validateOwner checks an owner token that may be empty (the server then
// makes one) with distlock's rule (distlock.ValidateOwner).
func validateOwner(owner string) *apiError {
	return argErr("owner", distlock.ValidateOwner(owner))
}

// requireOwner checks an owner token that must be given, with
// distlock's rule.
func requireOwner(owner string) *apiError {
	if owner == "" {
		return badRequest("owner", "invalid owner: empty")
	}
	return validateOwner(owner)
}

// validateMetadata checks metadata with distlock's rule
// (distlock.ValidateMetadata).
func validateMetadata(m string) *apiError {
	return argErr("metadata", distlock.ValidateMetadata(m))
}

// argErr answers a rule's refusal (rules' or engine's *ArgumentError,
// or distlock's) for the request field field; nil for anything else.
func argErr(field string, err error) *apiError {
	var ae *distlock.ArgumentError
	var ee *engine.ArgumentError
	reason := ""
	switch {
	case errors.As(err, &ae):
		reason = ae.Reason
	case errors.As(err, &ee):
		reason = ee.Reason
	default:
		return nil
	}
	return badRequest(field, "invalid "+field+": "+reason)
}

// validateAttempt checks an attempt id, which may be empty (the server
// then makes one), with rules.Attempt.
func validateAttempt(a string) *apiError { return argErr("attempt", rules.Attempt(a)) }

// waitFrom turns a wait_ms field into a wait budget.
func (s *Server) waitFrom(ms int64) (time.Duration, *apiError) {
	switch {
	case ms < 0:
		return 0, badRequest("wait_ms", fmt.Sprintf("invalid wait_ms: must not be negative, got %d", ms))
	case ms > s.maxWait.Milliseconds():
		return 0, badRequest("wait_ms", fmt.Sprintf("invalid wait_ms: %d is above this server's maximum of %d", ms, s.maxWait.Milliseconds()))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// boundBodies bounds the reading of request bodies (Timeouts.Body). A
// request that has a body gets a read deadline on its connection, Body
// after its headers (a request without one has nothing to read: net/http's
// own timeouts bound it). It bounds the handler's reading (decode), and
// net/http's reading of whatever of the body the handler left unread (a
// request refused before its body was read): net/http reads the body's
// rest before it answers, and closes the connection after the answer when
// that fails. Once the body has been read to its end, net/http lifts the
// deadline itself, as it starts watching the connection for the client
// going away: a held-open request (an acquire's wait, an event stream)
// outlives it.
func (s *Server) boundBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.timeouts.Body))
		}
		h.ServeHTTP(w, r)
	})
}

// decode reads the request body, a JSON object, into v (see readBody);
// an empty body is refused.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	data, e := s.readBody(w, r)
	if e == nil && len(data) == 0 {
		e = badRequest("body", "empty request body: send a JSON object")
	}
	if e != nil {
		return e
	}
	return decodeJSON(data, v)
}

// decodeOptional reads the request body into v like decode, and leaves v
// as it is when the body is empty (every field takes its default).
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) *apiError {
	data, e := s.readBody(w, r)
	if e != nil || len(data) == 0 {
		return e
	}
	return decodeJSON(data, v)
}

// readBody reads the whole request body (at most the server's limit),
// trimmed of white space, so the server notices at once when the client
// goes away afterwards. A body that does not arrive within the server's
// body timeout fails (boundBodies).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body := http.MaxBytesReader(w, r.Body, s.maxBody)
	data, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			e := newError(http.StatusRequestEntityTooLarge, api.CodeInvalidArgument,
				"request body larger than this server's limit of "+strconv.FormatInt(s.maxBody, 10)+" bytes")
			e.detail.Arg = "body"
			return nil, e
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, badRequest("body", "the request body did not arrive whole within this server's body timeout of "+s.timeouts.Body.String())
		}
		return nil, badRequest("body", "cannot read the request body: "+err.Error())
	}
	if s.refuseGone(r) {
		return nil, goneError() // see clientgone.go
	}
	return bytes.TrimSpace(data), nil
}

// decodeJSON decodes data, one JSON object with only known fields, into
// v. Any other value is refused, null too (which would leave v as it is,
// every field at its default, as an empty body does where one is needed).
func decodeJSON(data []byte, v any) *apiError {
	if len(data) == 0 || data[0] != '{' {
		return badRequest("body", "invalid JSON body: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body", "invalid JSON body: "+err.Error())
	}
	if dec.More() {
		return badRequest("body", "invalid JSON body: more than one value")
	}
	return nil
}

// requireWaiter checks a waiter id that must be given (see validateWaiter).
func requireWaiter(id string) *apiError {
	if id == "" {
		return badRequest("waiter", "invalid waiter: empty")
	}
	return validateWaiter(id)
}

// validateWaiter checks a waiter id (the waiter queue), which may be
// empty, with rules.Waiter.
func validateWaiter(id string) *apiError { return argErr("waiter", rules.Waiter(id)) }

// maxWaiterTTL bounds a queue entry's heartbeat ttl.
const maxWaiterTTL = time.Hour

// waiterTTLFrom turns a waiter_ttl_ms field into a heartbeat ttl.
func waiterTTLFrom(ms int64) (time.Duration, *apiError) {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms == 0:
		return distlock.WaiterTTL, nil
	case d < distlock.MinTTL || d > maxWaiterTTL:
		return 0, badRequest("waiter_ttl_ms", fmt.Sprintf("invalid waiter_ttl_ms: %d is not between %d and %d",
			ms, distlock.MinTTL.Milliseconds(), maxWaiterTTL.Milliseconds()))
	}
	return d, nil
}

// knownParams refuses a request whose query is not made of parameters of
// allowed, each given once, before anything changes: every route declares
// the parameters it takes (Server.route), and a typo (DELETE
// /v1/locks/x?ownr=a) is an error rather than a silent default (there:
// every holder freed). So are a repeated parameter (?owner=a&owner=b: which
// one?) and a pair that does not parse (?owner=a;b, ?owner=%zz), which
// url.Values would drop without a word, leaving the request without it.
func knownParams(r *http.Request, allowed ...string) *apiError {
	if r.URL.RawQuery == "" {
		return nil // most requests: nothing to read, nothing allocated
	}
	seen := make(map[string]bool)
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		k, errK := url.QueryUnescape(rawKey)
		if errK != nil {
			k = rawKey
		}
		if !slices.Contains(allowed, k) {
			want := "none"
			if len(allowed) > 0 {
				want = strings.Join(allowed, ", ")
			}
			return badRequest(k, fmt.Sprintf("unknown query parameter %q: this request takes %s", k, want))
		}
		if _, errV := url.QueryUnescape(rawValue); errK != nil || errV != nil {
			return badRequest(k, fmt.Sprintf("invalid query parameter %q: bad percent-encoding", k))
		}
		if strings.Contains(pair, ";") {
			return badRequest(k, fmt.Sprintf("invalid query parameter %q: ';' is not a separator (escape it as %%3B)", k))
		}
		if seen[k] {
			return badRequest(k, fmt.Sprintf("query parameter %q given more than once: this request takes it once", k))
		}
		seen[k] = true
	}
	return nil
}
