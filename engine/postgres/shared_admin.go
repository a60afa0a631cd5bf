package postgres

import (
	"context"
	"slices"
	"strings"

	"github.com/distlock/distlock/engine"
)

// The administration of shared locks: listing and force-release (schema.sql:
// force_release_shared; the holders it freed are told they were taken over
// by extend_shared, through _taken).

// listShared returns the shared locks held or waited for whose names start
// with prefix and come after cursor, in name order, at most limit, each
// read as Inspect reads it; last is the last name the statement found when
// it found limit names (its page was full), else "". A lock released
// between the statement and its Inspect is left out, but still bounds the
// page: the names after last were not read.
func (e *Engine) listShared(ctx context.Context, prefix, cursor string, limit int) (infos []engine.Info, last string, err error) {
	rows, err := e.pool.Query(ctx, e.sql.listShared, prefix, cursor, int32(limit))
	if err != nil {
		return nil, "", e.wrap(err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, "", e.wrap(err)
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", e.wrap(err)
	}
	if len(names) >= limit {
		last = names[len(names)-1]
	}
	for _, name := range names {
		info, err := e.inspectShared(ctx, name)
		if err != nil {
			return nil, "", err
		}
		if info.Held || info.Waiters > 0 {
			infos = append(infos, info)
		}
	}
	return infos, last, nil
}

// mergePage merges two pages in name order (each at most limit, in name
// order; name gives an item's name) into one of at most limit; lastA and
// lastB are the last names each page's statement read when its page was
// full ("" when it was not: nothing after it). The merged page ends at the
// first of them (the names after it were not read from that side), or at
// its limit-th item, past which the items of that item's name are kept
// too (the cursor is a name: a name's items stay on one page); next is
// where it ends ("" when neither page was full).
func mergePage[T any](a, b []T, name func(T) string, lastA, lastB string, limit int) ([]T, string) {
	bound := lastA
	if lastB != "" && (bound == "" || lastB < bound) {
		bound = lastB
	}
	all := append(a, b...)
	slices.SortStableFunc(all, func(x, y T) int { return strings.Compare(name(x), name(y)) })
	if bound != "" {
		all = slices.DeleteFunc(all, func(i T) bool { return name(i) > bound })
	}
	if len(all) > limit {
		cut := limit
		for cut < len(all) && name(all[cut]) == name(all[cut-1]) {
			cut++
		}
		if cut < len(all) {
			all = all[:cut]
			return all, name(all[cut-1])
		}
	}
	return all, bound
}

// infoName is an Info's name (mergePage's key for pages of locks).
func infoName(i engine.Info) string { return i.Name }

// forceShared frees every holder of the shared lock name, or only owner
// when owner is not ""; it reports whether anyone (owner) held it.
func (e *Engine) forceShared(ctx context.Context, name, owner string) (bool, error) {
	var n int32
	if err := e.pool.QueryRow(ctx, e.sql.forceReleaseShared, name, owner).Scan(&n); err != nil {
		return false, e.wrap(err)
	}
	return n > 0, nil
}
