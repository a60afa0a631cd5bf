package server

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/distlock/distlock/engine"
)

// listPage returns at most limit of the locks whose names start with
// prefix, from cursor on, and the cursor of the next page ("" after the
// last). An engine's List takes its limit as a hint (Redis SCAN answers
// about that many keys, a Cluster every master's), so a page of the engine
// may hold more: the rest is served from the same engine page by the next
// call, whose cursor is the engine's cursor and the last name served
// (pageCursor). Names are unique in a page and sorted. An answer from part
// of the engine (engine.AsPartial) is served with its *engine.PartialError.
func listPage(ctx context.Context, l engine.Lister, prefix, cursor string, limit int) (_ []engine.Info, _ string, partial error) {
	from, after, err := parsePageCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	infos, next, err := l.List(ctx, prefix, from, limit)
	if _, ok := engine.AsPartial(err); ok {
		partial = err
	} else if err != nil {
		return nil, "", err
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	page := make([]engine.Info, 0, min(len(infos), limit))
	for _, i := range infos {
		if i.Name <= after && after != "" || len(page) > 0 && page[len(page)-1].Name == i.Name {
			continue // served by an earlier page; or SCAN listed it twice
		}
		if len(page) == limit {
			return page, pageCursor(from, page[limit-1].Name), partial
		}
		page = append(page, i)
	}
	if next == "" {
		return page, "", partial
	}
	return page, pageCursor(next, ""), partial
}

// pageCursor is the cursor of a listing page: the engine's cursor from,
// and after, the last name served of the engine page from returns ("" when
// none was). It is "<len(from)>:<from><after>".
func pageCursor(from, after string) string {
	return strconv.Itoa(len(from)) + ":" + from + after
}

// errBadCursor: a cursor that no listing page returned.
var errBadCursor = errors.New("not a cursor this server returned")

// parsePageCursor reads a cursor made by pageCursor; "" is the first page.
func parsePageCursor(cursor string) (from, after string, err error) {
	if cursor == "" {
		return "", "", nil
	}
	n, rest, ok := strings.Cut(cursor, ":")
	size, perr := strconv.Atoi(n)
	if !ok || perr != nil || size < 0 || size > len(rest) {
		return "", "", errBadCursor
	}
	return rest[:size], rest[size:], nil
}
