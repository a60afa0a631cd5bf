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
// read as Inspect reads it.
func (e *Engine) listShared(ctx context.Context, prefix, cursor string, limit int) ([]engine.Info, error) {
	rows, err := e.pool.Query(ctx, e.sql.listShared, prefix, cursor, int32(limit))
	if err != nil {
		return nil, e.wrap(err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, e.wrap(err)
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, e.wrap(err)
	}
	var infos []engine.Info
	for _, name := range names {
		info, err := e.inspectShared(ctx, name)
		if err != nil {
			return nil, err
		}
		if info.Held || info.Waiters > 0 {
			infos = append(infos, info)
		}
	}
	return infos, nil
}

// mergePage merges two pages of locks in name order (each at most limit,
// in name order) into one of at most limit; next is the last name of a
// full page.
func mergePage(a, b []engine.Info, limit int) ([]engine.Info, string) {
	all := append(a, b...)
	slices.SortFunc(all, func(x, y engine.Info) int { return strings.Compare(x.Name, y.Name) })
	if len(all) < limit && len(a) < limit && len(b) < limit {
		return all, ""
	}
	all = all[:min(limit, len(all))]
	return all, all[len(all)-1].Name
}

// forceShared frees every holder of the shared lock name, or only owner
// when owner is not ""; it reports whether anyone (owner) held it.
func (e *Engine) forceShared(ctx context.Context, name, owner string) (bool, error) {
	var n int32
	if err := e.pool.QueryRow(ctx, e.sql.forceReleaseShared, name, owner).Scan(&n); err != nil {
		return false, e.wrap(err)
	}
	return n > 0, nil
}
