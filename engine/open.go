package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Backends opened by URL, as database/sql opens drivers: each engine
// package registers its URL schemes in an init function (Register), and
// Open picks the opener by the URL's scheme. A program links the backends
// it imports, by a blank import for those it names only by URL:
//
//	import _ "github.com/distlock/distlock/engine/etcd"
//
// The registry is written only by init functions and read afterwards.

// OpenFunc opens an engine from rawURL, whose scheme (or, for a list of
// URLs separated by commas, whose first URL's scheme) is one the opener
// was registered for. The engine it returns owns what it connected (its
// Close closes the connections). It reports a URL it cannot use with
// BadURL, and sends nothing to the backend on a bad URL.
type OpenFunc func(ctx context.Context, rawURL string, cfg OpenConfig) (Engine, error)

// OpenConfig carries the settings of Open that are not in the URL.
type OpenConfig struct {
	// NodeTimeout is a quorum's per-node timeout (0: the quorum's default),
	// for a URL that names several nodes; the URL's node_timeout wins.
	NodeTimeout time.Duration
	// NodeErrors, when not nil, is told of every failed call to a node of
	// a quorum (a metric).
	NodeErrors func(node string, err error)
}

// OpenOption sets a field of OpenConfig.
type OpenOption func(*OpenConfig)

// WithNodeTimeout sets OpenConfig.NodeTimeout.
func WithNodeTimeout(d time.Duration) OpenOption {
	return func(c *OpenConfig) { c.NodeTimeout = d }
}

// WithNodeErrors sets OpenConfig.NodeErrors.
func WithNodeErrors(fn func(node string, err error)) OpenOption {
	return func(c *OpenConfig) { c.NodeErrors = fn }
}

var registry struct {
	mu      sync.RWMutex
	openers map[string]OpenFunc
}

// Register makes Open use open for URLs of scheme (lower case, as in
// "redis" or "redis+sentinel"). Engine packages call it from init. It
// panics when scheme is registered twice or open is nil, as
// database/sql.Register does: both are programming errors.
func Register(scheme string, open OpenFunc) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if open == nil {
		panic("distlock/engine: Register of a nil opener for " + scheme)
	}
	if _, dup := registry.openers[scheme]; dup {
		panic("distlock/engine: Register called twice for the scheme " + scheme)
	}
	if registry.openers == nil {
		registry.openers = make(map[string]OpenFunc)
	}
	registry.openers[scheme] = open
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	out := make([]string, 0, len(registry.openers))
	for s := range registry.openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the engine that rawURL names, with the opener registered for
// its scheme. An unregistered scheme is an *URLError matching
// ErrUnknownScheme; a URL its opener cannot use, one matching ErrBadURL.
// Neither contacts the backend. Open does not check that the backend
// answers: an engine's first call does.
func Open(ctx context.Context, rawURL string, opts ...OpenOption) (Engine, error) {
	var cfg OpenConfig
	for _, o := range opts {
		o(&cfg)
	}
	rawURL = strings.TrimSpace(rawURL)
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok || scheme == "" {
		return nil, BadURL(rawURL, "", "want SCHEME://..., such as redis://host:6379 or mem://")
	}
	scheme = strings.ToLower(scheme)
	registry.mu.RLock()
	open := registry.openers[scheme]
	registry.mu.RUnlock()
	if open == nil {
		return nil, &URLError{URL: RedactURL(rawURL), Reason: fmt.Sprintf("no backend is registered for %s:// (registered: %s); "+
			"import the engine package that opens it", scheme, strings.Join(Schemes(), ", ")), Err: ErrUnknownScheme}
	}
	return open(ctx, rawURL, cfg)
}

// ErrUnknownScheme: no backend is registered for a URL's scheme.
var ErrUnknownScheme = errors.New("distlock/engine: unknown URL scheme")

// ErrBadURL: a backend URL is malformed, or has a parameter its backend
// does not know or cannot use.
var ErrBadURL = errors.New("distlock/engine: bad backend URL")

// URLError reports a backend URL that Open cannot use. Nothing was opened
// and nothing was sent. It matches Err: ErrUnknownScheme or ErrBadURL.
type URLError struct {
	URL    string // the URL, its password hidden
	Param  string // the query parameter at fault, if one is
	Reason string
	Err    error
}

func (e *URLError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("distlock: backend URL %q: parameter %s: %s", e.URL, e.Param, e.Reason)
	}
	return fmt.Sprintf("distlock: backend URL %q: %s", e.URL, e.Reason)
}

// Unwrap returns Err.
func (e *URLError) Unwrap() error { return e.Err }

// BadURL returns an *URLError matching ErrBadURL, for openers: param is
// the query parameter at fault ("" for the URL as a whole). Every
// password of rawURL (see RedactURL) is hidden in the URL, the parameter
// and the reason, which may quote the URL (as url.Parse's errors do).
func BadURL(rawURL, param, reason string) error {
	secrets := urlSecrets(rawURL)
	return &URLError{URL: RedactURL(rawURL), Param: hideSecrets(param, secrets), Reason: hideSecrets(reason, secrets), Err: ErrBadURL}
}

// RedactURL hides the passwords (or tokens) of every URL of a list, for
// messages: the userinfo becomes **** and every occurrence of a password
// (the userinfo's, and the value of a password or sentinel_password query
// parameter) elsewhere in the URL too.
func RedactURL(rawURL string) string {
	parts := strings.Split(rawURL, ",")
	for i, p := range parts {
		scheme, rest, ok := strings.Cut(p, "://")
		if !ok {
			continue
		}
		if at := userInfoEnd(rest); at >= 0 {
			parts[i] = scheme + "://****@" + rest[at+1:]
		}
	}
	return hideSecrets(strings.Join(parts, ","), urlSecrets(rawURL))
}

// secretParams are the query parameters whose values are passwords
// (go-redis's Sentinel URL, pgx's PostgreSQL URL).
var secretParams = []string{"password", "sentinel_password"}

// minSecretPiece is the length from which a piece of a password (split at
// / ? or #) is hidden too: a shorter one would hide common text.
const minSecretPiece = 3

// userInfoEnd returns the index in rest (a URL after its "scheme://") of
// the "@" that ends its userinfo, or -1: the last "@" before the query.
func userInfoEnd(rest string) int {
	beforeQuery, _, _ := strings.Cut(rest, "?")
	return strings.LastIndex(beforeQuery, "@")
}

// urlSecrets returns the passwords of every URL of a list, each as
// written, unescaped and as %q quotes it, longest first; parsing as
// little as it can, so that it finds them in a URL that net/url rejects.
func urlSecrets(rawURL string) []string {
	var raw []string
	for _, p := range strings.Split(rawURL, ",") {
		_, rest, ok := strings.Cut(p, "://")
		if !ok {
			rest = p
		}
		if at := userInfoEnd(rest); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				raw = append(raw, pw)
			}
		}
		_, query, _ := strings.Cut(rest, "?")
		for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
			k, v, _ := strings.Cut(kv, "=")
			if k, err := url.QueryUnescape(k); err == nil && slices.Contains(secretParams, strings.ToLower(k)) {
				raw = append(raw, v)
			}
		}
	}
	var out []string
	for _, s := range raw {
		forms := []string{s}
		if u, err := url.PathUnescape(s); err == nil {
			forms = append(forms, u)
		}
		if u, err := url.QueryUnescape(s); err == nil {
			forms = append(forms, u)
		}
		for _, f := range forms {
			out = append(out, f, strings.Trim(strconv.Quote(f), `"`))
		}
		// An unescaped / ? or # ends the authority for net/url, whose
		// errors then quote the password's pieces.
		for _, piece := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("/?#", r) }) {
			if piece != s && len(piece) >= minSecretPiece {
				out = append(out, piece)
			}
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// hideSecrets replaces every occurrence of each secret in s by ****.
func hideSecrets(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "****")
	}
	return s
}

// URLParams reads the query parameters of a backend URL for an opener:
// each Duration, Bool or String call takes one parameter, and Done
// reports a parameter nobody took (a typo) or the first bad value.
type URLParams struct {
	raw  string
	q    url.Values
	used map[string]bool
	err  error
}

// NewURLParams returns the parameters of q, for the URL raw (in errors).
func NewURLParams(raw string, q url.Values) *URLParams {
	return &URLParams{raw: raw, q: q, used: make(map[string]bool)}
}

// String takes the parameter name, or def when it is absent.
func (p *URLParams) String(name, def string) string {
	p.used[name] = true
	if v := p.q.Get(name); v != "" {
		return v
	}
	return def
}

// Duration takes the parameter name as a positive duration ("50ms",
// "2s"), or def when it is absent.
func (p *URLParams) Duration(name string, def time.Duration) time.Duration {
	v := p.String(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.fail(name, fmt.Sprintf("%q is not a positive duration such as 500ms or 2s", v))
		return def
	}
	return d
}

// Bool takes the parameter name as true or false, or def when it is
// absent.
func (p *URLParams) Bool(name string, def bool) bool {
	v := p.String(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, fmt.Sprintf("%q is not true or false", v))
		return def
	}
	return b
}

func (p *URLParams) fail(name, reason string) {
	if p.err == nil {
		p.err = BadURL(p.raw, name, reason)
	}
}

// Done returns the first bad value, else an error for a parameter given
// twice (RefuseRepeated), else one for the first parameter (in sorted
// order) that no call took, else nil.
func (p *URLParams) Done() error {
	if p.err != nil {
		return p.err
	}
	if err := RefuseRepeated(p.raw, p.q); err != nil {
		return err
	}
	names := make([]string, 0, len(p.q))
	for n := range p.q {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !p.used[n] {
			return BadURL(p.raw, n, "unknown parameter")
		}
	}
	return nil
}

// RefuseRepeated returns an *URLError matching ErrBadURL for the first
// parameter (in sorted order) of q given more than once, other than those
// named in lists (parameters that are lists by design, as go-redis's
// addr), or nil: a backend would silently use one of the values.
func RefuseRepeated(rawURL string, q url.Values, lists ...string) error {
	for _, n := range slices.Sorted(maps.Keys(q)) {
		if len(q[n]) > 1 && !slices.Contains(lists, n) {
			return BadURL(rawURL, n, "given more than once")
		}
	}
	return nil
}

// HostList is a URL that names several hosts, as in
// etcd://user:pass@h1:2379,h2:2379/path?param=value, which net/url does not
// parse.
type HostList struct {
	Scheme   string // lower case
	UserInfo string // "user:password", as written (escaped), or ""
	Hosts    []string
	Path     string // without its leading slash
	Query    url.Values
}

// ParseHostList parses rawURL into a HostList; an empty host or a bad
// query is an *URLError matching ErrBadURL.
func ParseHostList(rawURL string) (*HostList, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, BadURL(rawURL, "", "want SCHEME://host:port[,host:port...]")
	}
	rest, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	h := &HostList{Scheme: strings.ToLower(scheme), Path: path}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		h.UserInfo, authority = authority[:at], authority[at+1:]
	}
	for _, host := range strings.Split(authority, ",") {
		if host = strings.TrimSpace(host); host == "" {
			return nil, BadURL(rawURL, "", "a host of the list is empty: want "+h.Scheme+"://host1:port,host2:port")
		}
		h.Hosts = append(h.Hosts, host)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, BadURL(rawURL, "", "bad query: "+err.Error())
	}
	h.Query = q
	return h, nil
}

// User returns the user name and password of UserInfo, unescaped.
func (h *HostList) User() (user, password string) {
	u, p, _ := strings.Cut(h.UserInfo, ":")
	user, _ = url.PathUnescape(u)
	password, _ = url.PathUnescape(p)
	return user, password
}
