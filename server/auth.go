package server

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/distlock/distlock/server/api"
)

// Role is what a bearer token may do. Each role may do what the roles
// below it may.
type Role int

const (
	// RoleNone: no valid token.
	RoleNone Role = iota
	// RoleRead: status, list, events of the dashboard, /metrics, /v1/info.
	RoleRead
	// RoleWrite: acquire, extend, release, fence, release events: what a
	// lock client needs.
	RoleWrite
	// RoleAdmin: force-release, and owner tokens in status and list.
	RoleAdmin
)

// String returns the role's name as tokens files spell it.
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole parses read, write or admin.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "read", "readonly", "read-only":
		return RoleRead, nil
	case "write":
		return RoleWrite, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("unknown role %q (want read, write or admin)", s)
}

// MinTokenLen is the shortest bearer token accepted: tokens are secrets,
// and short ones can be guessed.
const MinTokenLen = 16

// Tokens maps bearer tokens to roles. Only SHA-256 hashes of the tokens
// are kept in memory.
type Tokens struct {
	byHash map[[32]byte]Role
}

// NewTokens returns an empty set of tokens.
func NewTokens() *Tokens { return &Tokens{byHash: make(map[[32]byte]Role)} }

// Add adds a token with its role. A token added already with another role
// is refused (the same role again changes nothing).
func (t *Tokens) Add(role Role, token string) error {
	if role < RoleRead || role > RoleAdmin {
		return fmt.Errorf("invalid role %v", role)
	}
	if len(token) < MinTokenLen {
		return fmt.Errorf("a %s token is %d bytes long; tokens must be at least %d (for example: openssl rand -hex 16)",
			role, len(token), MinTokenLen)
	}
	if strings.ContainsAny(token, " \t\r\n,") {
		return fmt.Errorf("a %s token contains white space or a comma", role)
	}
	h := sha256.Sum256([]byte(token))
	if had, ok := t.byHash[h]; ok && had != role {
		// One role per token: which one was meant is not for the server
		// to guess (the last line winning gave a read token admin).
		return fmt.Errorf("a token given the %s role is given the %s role too: one role per token", had, role)
	}
	t.byHash[h] = role
	return nil
}

// Len returns the number of tokens.
func (t *Tokens) Len() int { return len(t.byHash) }

// ParseTokens parses tokens given as ROLE:TOKEN entries separated by new
// lines, commas or white space; '#' starts a comment that runs to the end
// of the line. Roles are read, write and admin.
func ParseTokens(text string) (*Tokens, error) {
	t := NewTokens()
	for n, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, entry := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			roleName, token, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want ROLE:TOKEN, got an entry without ':'", n+1)
			}
			role, err := ParseRole(roleName)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			if err := t.Add(role, token); err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
		}
	}
	if t.Len() == 0 {
		return nil, fmt.Errorf("no tokens found: write ROLE:TOKEN entries, one a line (roles: read, write, admin)")
	}
	return t, nil
}

// LoadTokensFile reads tokens from a file in the format of ParseTokens.
func LoadTokensFile(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTokens(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// role returns the role of token. Tokens are looked up by their SHA-256
// hash, so the lookup's timing says nothing useful about the token.
func (t *Tokens) role(token string) Role {
	return t.byHash[sha256.Sum256([]byte(token))]
}

// authorize returns the caller's role, or writes the error answer and
// returns false when it is below need.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, need Role) (Role, bool) {
	if s.tokens == nil {
		return RoleAdmin, true
	}
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		writeError(w, newError(http.StatusUnauthorized, api.CodeUnauthorized,
			"this server needs a bearer token: send the header 'Authorization: Bearer TOKEN'"))
		return RoleNone, false
	}
	role := s.tokens.role(strings.TrimSpace(token))
	if role == RoleNone {
		writeError(w, newError(http.StatusUnauthorized, api.CodeUnauthorized, "unknown bearer token"))
		return RoleNone, false
	}
	if role < need {
		writeError(w, newError(http.StatusForbidden, api.CodeForbidden,
			fmt.Sprintf("a %s token may not do this; it needs the %s role", role, need)))
		return role, false
	}
	return role, true
}

// holderID is api.HolderID.
func holderID(owner string) string { return api.HolderID(owner) }
