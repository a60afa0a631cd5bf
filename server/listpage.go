package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/distlock/distlock/engine"
)

// listPage returns at most limit of the locks whose names start with
// prefix, from cursor on, and the cursor of the next page ("" after the
// last). An engine's List takes its limit as a hint (Redis SCAN answers
// about that many keys, a Cluster every master's), so a page of the engine
// may hold more. The rest of it is carried in the next cursor by name
// (pending) and served from there, each name inspected again, before the
// listing goes on from the engine's cursor: listing the engine's page
// again would not do, since under churn the same engine cursor can answer
// a longer page, whose extra names sorted before those served would be
// skipped. A rest too long for a cursor (maxPendingLen) is served that
// way instead, by the last name served. Names are unique in a page and
// sorted. An answer from part of the engine (engine.AsPartial) is served
// with its *engine.PartialError. A cursor that is not one this listing
// (this prefix) returned is refused with errBadCursor (openPageCursor),
// and so is one whose engine part the engine refuses (an
// *engine.ArgumentError of its cursor): no part of it reaches the engine
// unchecked.
func listPage(ctx context.Context, e engine.Engine, l engine.Lister, prefix, cursor string, limit int) ([]engine.Info, string, error) {
	c, err := openPageCursor(e, prefix, cursor)
	if err != nil {
		return nil, "", err
	}
	infos, next, err := listPageFrom(ctx, e, l, prefix, c, limit)
	var ae *engine.ArgumentError
	if errors.As(err, &ae) && ae.Arg == "cursor" {
		return nil, "", fmt.Errorf("%w (%s)", errBadCursor, ae.Reason)
	}
	if next != "" {
		next = sealPageCursor(prefix, next)
	}
	return infos, next, err
}

// listPageFrom is listPage from the cursor c, checked; the next cursor
// is returned unsealed.
func listPageFrom(ctx context.Context, e engine.Engine, l engine.Lister, prefix string, c pageCursor, limit int) (_ []engine.Info, _ string, partial error) {
	if len(c.pending) > 0 {
		return servePending(ctx, e, c, limit)
	}
	infos, next, err := l.List(ctx, prefix, c.from, limit)
	if _, ok := engine.AsPartial(err); ok {
		partial = err
	} else if err != nil {
		return nil, "", err
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	page := make([]engine.Info, 0, min(len(infos), limit))
	for k, i := range infos {
		if i.Name <= c.after && c.after != "" || len(page) > 0 && page[len(page)-1].Name == i.Name {
			continue // served by an earlier page; or SCAN listed it twice
		}
		if len(page) == limit {
			rest := pageCursor{from: next, ended: next == "", pending: restNames(infos[k:], page[limit-1].Name)}
			if rest.size() > maxPendingLen {
				return page, pageCursor{from: c.from, after: page[limit-1].Name}.String(), partial
			}
			return page, rest.String(), partial
		}
		page = append(page, i)
	}
	if next == "" {
		return page, "", partial
	}
	return page, pageCursor{from: next}.String(), partial
}

// restNames returns the distinct names of infos (sorted) after last.
func restNames(infos []engine.Info, last string) []string {
	var out []string
	for _, i := range infos {
		if i.Name > last && (len(out) == 0 || out[len(out)-1] != i.Name) {
			out = append(out, i.Name)
		}
	}
	return out
}

// servePending serves up to limit of the names c carries, inspected again
// (a lock released since is left out, as a listing would), and the cursor
// of what is left: the rest of the names, else the engine's cursor.
func servePending(ctx context.Context, e engine.Engine, c pageCursor, limit int) ([]engine.Info, string, error) {
	var page []engine.Info
	var partial error
	for len(c.pending) > 0 && len(page) < limit {
		info, err := e.Inspect(ctx, c.pending[0])
		if p, ok := engine.AsPartial(err); ok {
			partial = p
		} else if err != nil {
			return nil, "", err
		}
		c.pending = c.pending[1:]
		if listed(info) {
			page = append(page, info)
		}
	}
	switch {
	case len(c.pending) > 0:
		return page, c.String(), partial
	case c.ended:
		return page, "", partial
	}
	return page, pageCursor{from: c.from}.String(), partial
}

// listed reports whether a listing shows the lock info describes: held, or
// a shared lock waited for.
func listed(info engine.Info) bool {
	return info.Held || info.Kind != engine.Mutex && info.Waiters > 0
}

// maxPendingLen bounds the names a cursor carries (their bytes): within
// maxCursorLen with room for the engine's cursor.
const maxPendingLen = maxCursorLen / 2

// pageCursor is where a listing goes on: from the engine's cursor from
// (after the last name served of that engine page, after, when one was),
// or, first, with the names of an engine page not served yet (pending),
// and then from from, unless the engine's listing had ended.
type pageCursor struct {
	from, after string
	ended       bool
	pending     []string
}

// size is the bytes of the names the cursor carries.
func (c pageCursor) size() int {
	n := 0
	for _, p := range c.pending {
		n += len(p) + 8
	}
	return n
}

// String encodes c as length-prefixed fields: "<len>:<field>" for from,
// after, the ended flag and each pending name.
func (c pageCursor) String() string {
	var b strings.Builder
	field := func(s string) { b.WriteString(strconv.Itoa(len(s))); b.WriteByte(':'); b.WriteString(s) }
	field(c.from)
	field(c.after)
	if c.ended {
		field("1")
	} else {
		field("")
	}
	for _, p := range c.pending {
		field(p)
	}
	return b.String()
}

// errBadCursor: a cursor that no listing page returned.
var errBadCursor = errors.New("not a cursor this server returned")

// cursorKey keys the seal of a listing's cursors (sealPageCursor). It is
// the same on every server, so that any server of a backend goes on with
// another's cursor (a Client fails over between them mid-listing, and a
// server restarts): the seal tells the server's own cursors from any
// other string, made or changed by hand, and binds a cursor to its
// listing's prefix; it is no secret. What a cursor carries is checked
// all the same (openPageCursor), so that even one forged with this key
// lists nothing outside its prefix and passes no bad name on.
var cursorKey = []byte("distlock listing cursor v1")

// sealLen is the length of a cursor's seal: base64url of 16 bytes.
const sealLen = 22

// seal is the seal of the cursor body of a listing of prefix.
func seal(prefix, body string) string {
	m := hmac.New(sha256.New, cursorKey)
	m.Write([]byte(strconv.Itoa(len(prefix)) + ":" + prefix + body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// sealPageCursor is the cursor a listing of prefix returns for body (a
// pageCursor's String): its seal, then body.
func sealPageCursor(prefix, body string) string {
	return seal(prefix, body) + body
}

// openPageCursor reads a cursor a listing of prefix returned
// (sealPageCursor); "" is the first page. It refuses with errBadCursor a
// cursor whose seal is not its own for prefix, or whose names are not
// names of e (engine.CheckName) that start with prefix, pending ones in
// order after the one served last.
func openPageCursor(e engine.Engine, prefix, cursor string) (pageCursor, error) {
	if cursor == "" {
		return pageCursor{}, nil
	}
	if len(cursor) <= sealLen || !hmac.Equal([]byte(cursor[:sealLen]), []byte(seal(prefix, cursor[sealLen:]))) {
		return pageCursor{}, errBadCursor
	}
	c, err := parsePageCursor(cursor[sealLen:])
	if err != nil {
		return pageCursor{}, err
	}
	last := c.after
	if last != "" && !prefixedName(e, prefix, last) || c.ended && len(c.pending) == 0 {
		return pageCursor{}, errBadCursor
	}
	for _, p := range c.pending {
		if !prefixedName(e, prefix, p) || p <= last {
			return pageCursor{}, errBadCursor
		}
		last = p
	}
	return c, nil
}

// prefixedName reports whether name is a name of e that a listing of
// prefix lists.
func prefixedName(e engine.Engine, prefix, name string) bool {
	return strings.HasPrefix(name, prefix) && engine.CheckName(e, name) == nil
}

// parsePageCursor reads a cursor body made by pageCursor.String.
func parsePageCursor(cursor string) (pageCursor, error) {
	var fields []string
	for rest := cursor; rest != ""; {
		n, tail, ok := strings.Cut(rest, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size < 0 || size > len(tail) {
			return pageCursor{}, errBadCursor
		}
		fields, rest = append(fields, tail[:size]), tail[size:]
	}
	if len(fields) < 3 || fields[2] != "" && fields[2] != "1" {
		return pageCursor{}, errBadCursor
	}
	return pageCursor{from: fields[0], after: fields[1], ended: fields[2] == "1", pending: fields[3:]}, nil
}
