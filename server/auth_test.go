package server_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distlock/distlock/server"
	"github.com/distlock/distlock/server/api"
)

const (
	readTok  = "read-token-0123456789"
	writeTok = "write-token-0123456789"
	adminTok = "admin-token-0123456789"
)

func tokens(t *testing.T) *server.Tokens {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	text := "# role:token\nread:" + readTok + "\nwrite:" + writeTok + ", admin:" + adminTok + "  # the operator\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := server.LoadTokensFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Len() != 3 {
		t.Fatalf("%d tokens", tk.Len())
	}
	return tk
}

// TestAuthRoles: every endpoint against no token, an unknown token and
// each role.
func TestAuthRoles(t *testing.T) {
	s := start(t, nil, server.WithTokens(tokens(t)))
	r := call(t, "POST", lockURL(s, "held", "acquire"), writeTok, map[string]any{"owner": "the-owner", "ttl_ms": 60000})
	want(t, "acquire with write", r, 200, "")

	checkEndpointRoles(t, s)
	// The events streams, without holding them open.
	want(t, "lock events as read", call(t, "GET", lockURL(s, "x", "events"), readTok, nil), 403, api.CodeForbidden)
	want(t, "dashboard events without a token", call(t, "GET", s.url+"/v1/dashboard/events", "", nil), 401, api.CodeUnauthorized)

	checkOwnersShownToAdmins(t, s, "held", "the-owner")
	r = call(t, "POST", lockURL(s, "held", "acquire"), writeTok, nil)
	want(t, "contended acquire as write", r, 409, api.CodeLocked)
	if r.errField(t, "holder") != nil || r.errField(t, "holder_id") == nil {
		t.Fatalf("locked answer to a writer shows the owner token: %s", r.body)
	}

	// Public pages need no token.
	for _, p := range []string{"/", "/app.js", "/style.css", "/healthz"} {
		want(t, p, call(t, "GET", s.url+p, "", nil), 200, "")
	}
	m := call(t, "GET", s.url+"/v1/info", readTok, nil).json(t)
	if m["role"] != "read" || m["auth"] != true {
		t.Fatalf("info as read: %v", m)
	}
	// The scheme is case-insensitive; other schemes are refused.
	for scheme, status := range map[string]int{"bearer ": 200, "Basic ": 401} {
		req, _ := http.NewRequest("GET", s.url+"/v1/info", nil)
		req.Header.Set("Authorization", scheme+readTok)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("scheme %q: %d, want %d", scheme, resp.StatusCode, status)
		}
	}
}

// checkEndpointRoles calls every endpoint without a token, with an
// unknown one and as each role: refused (401, 403) below the role it
// needs, never refused at or above it.
func checkEndpointRoles(t *testing.T, s *testServer) {
	t.Helper()
	type ep struct {
		method, path string
		body         any
		need         server.Role
	}
	eps := []ep{
		{"GET", "/v1/locks/held", nil, server.RoleRead},
		{"GET", "/v1/locks", nil, server.RoleRead},
		{"GET", "/v1/info", nil, server.RoleRead},
		{"GET", "/metrics", nil, server.RoleRead},
		{"POST", "/v1/locks/free/acquire", `{"owner":"x"}`, server.RoleWrite},
		{"POST", "/v1/locks/free/extend", `{"owner":"x"}`, server.RoleWrite},
		{"POST", "/v1/locks/free/release", `{"owner":"x"}`, server.RoleWrite},
		{"POST", "/v1/locks/free/fence", `{"owner":"x","token":1}`, server.RoleWrite},
		{"POST", "/v1/extend", `{"locks":[]}`, server.RoleWrite},
		{"DELETE", "/v1/locks/gone", nil, server.RoleAdmin},
	}
	for _, e := range eps {
		what := e.method + " " + e.path
		r := call(t, e.method, s.url+e.path, "", e.body)
		want(t, what+" without a token", r, 401, api.CodeUnauthorized)
		if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s: 401 without WWW-Authenticate", what)
		}
		want(t, what+" with an unknown token", call(t, e.method, s.url+e.path, "not-a-token-0123456789", e.body), 401, api.CodeUnauthorized)
		for _, c := range []struct {
			tok  string
			role server.Role
		}{{readTok, server.RoleRead}, {writeTok, server.RoleWrite}, {adminTok, server.RoleAdmin}} {
			r := call(t, e.method, s.url+e.path, c.tok, e.body)
			if c.role < e.need {
				want(t, what+" as "+c.role.String(), r, 403, api.CodeForbidden)
			} else if r.status == 401 || r.status == 403 {
				t.Fatalf("%s as %s: %d %s", what, c.role, r.status, r.body)
			}
		}
	}
}

// checkOwnersShownToAdmins: the status and the listing of name show its
// owner token to admins only, and its holder id to every role.
func checkOwnersShownToAdmins(t *testing.T, s *testServer, name, owner string) {
	t.Helper()
	for _, c := range []struct {
		tok       string
		showOwner bool
	}{{readTok, false}, {writeTok, false}, {adminTok, true}} {
		m := call(t, "GET", lockURL(s, name, ""), c.tok, nil).json(t)
		if (m["owner"] == owner) != c.showOwner || m["holder_id"] == nil || m["holder_id"] == "" {
			t.Fatalf("status as %q: %v", c.tok, m)
		}
		l := call(t, "GET", s.url+"/v1/locks", c.tok, nil).json(t)["locks"].([]any)[0].(map[string]any)
		if (l["owner"] == owner) != c.showOwner {
			t.Fatalf("list as %q: %v", c.tok, l)
		}
	}
}

// TestParseTokens: the token file format and its errors.
func TestParseTokens(t *testing.T) {
	tk, err := server.ParseTokens("admin:" + adminTok + ",read:" + readTok + "\nread:" + readTok)
	if err != nil || tk.Len() != 2 {
		t.Fatalf("%v %v", tk, err)
	}
	for _, bad := range []string{
		"",
		"# only a comment",
		adminTok,
		"root:" + adminTok,
		"admin:short",
		"read:" + readTok + "\nadmin:" + readTok, // one token, two roles
	} {
		if _, err := server.ParseTokens(bad); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		}
	}
}

// fakeListener has a non-loopback address and never accepts.
type fakeListener struct{ net.Listener }

func (fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7420} }

// TestPublicNeedsAuth: an open server refuses a non-loopback address.
func TestPublicNeedsAuth(t *testing.T) {
	srv, err := server.New(failing{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	err = srv.Serve(fakeListener{})
	if err == nil || !strings.Contains(err.Error(), "without authentication") {
		t.Fatalf("Serve on a public address without tokens: %v", err)
	}
}
