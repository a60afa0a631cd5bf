package remote

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/distlock/distlock/engine"
)

// The URL schemes this package registers with engine.Register:
//
//	distlock://[:TOKEN@]host:7420[/path]    a distlock server over HTTP
//	distlocks://[:TOKEN@]host:7420[/path]   the same over HTTPS (the system's roots)
//
// Several servers of one backend are a list separated by commas (see New):
// whole URLs, or hosts after the first that take the first's scheme
// (distlock://a:7420,b:7420). The bearer token is the URL's password (user
// name empty), given once or the same in each; the URL takes no query
// parameter.
const (
	Scheme    = "distlock"
	SchemeTLS = "distlocks"
)

func init() {
	engine.Register(Scheme, open)
	engine.Register(SchemeTLS, open)
}

func open(_ context.Context, rawURL string, _ engine.OpenConfig) (engine.Engine, error) {
	var servers []string
	token := ""
	first := ""
	for _, raw := range strings.Split(rawURL, ",") {
		raw = strings.TrimSpace(raw)
		if first == "" {
			first, _, _ = strings.Cut(raw, "://")
		} else if raw != "" && !strings.Contains(raw, "://") {
			raw = first + "://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, engine.BadURL(rawURL, "", err.Error())
		}
		httpScheme := map[string]string{Scheme: "http", SchemeTLS: "https"}[strings.ToLower(u.Scheme)]
		if httpScheme == "" {
			return nil, engine.BadURL(rawURL, "", "every server of a list is a distlock:// or distlocks:// URL")
		}
		if u.RawQuery != "" {
			return nil, engine.BadURL(rawURL, firstParam(u.RawQuery), "a distlock server URL takes no parameter")
		}
		if u.User != nil {
			t, _ := u.User.Password()
			if t == "" || u.User.Username() != "" || token != "" && t != token {
				return nil, engine.BadURL(rawURL, "", "the token is the URL's password, user name empty (distlock://:TOKEN@host:7420), the same for every server")
			}
			token = t
			u.User = nil
		}
		u.Scheme = httpScheme
		servers = append(servers, u.String())
	}
	e, err := New(strings.Join(servers, ","), WithToken(token))
	var ae *engine.ArgumentError
	if errors.As(err, &ae) {
		return nil, engine.BadURL(rawURL, "", ae.Reason)
	}
	return e, err
}

// firstParam returns the name of the first parameter of a raw query, for
// URLError.Param (never its value, which may be a secret).
func firstParam(rawQuery string) string {
	kv, _, _ := strings.Cut(rawQuery, "&")
	name, _, _ := strings.Cut(kv, "=")
	if n, err := url.QueryUnescape(name); err == nil {
		return n
	}
	return name
}
