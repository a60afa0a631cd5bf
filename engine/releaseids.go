package engine

import "slices"

// KeptReleaseIDs is how many release ids a hold remembers (OnceReleaser):
// a copy of a ReleaseOnce drops no second hold while fewer than this many
// other releases of the owner's holds came between the release and its
// copy (a copy delayed behind another process's releases of the same
// re-entrant owner, say). Each id costs its length in the hold's record,
// kept only while the owner holds more than one hold.
const KeptReleaseIDs = 8

// ReleaseIDs are the ids of the last releases that counted a hold down,
// oldest first, at most KeptReleaseIDs of them.
type ReleaseIDs []string

// Has reports whether id is one of ids: a release with it was applied.
func (ids ReleaseIDs) Has(id string) bool {
	return id != "" && slices.Contains(ids, id)
}

// With returns ids with id added as the newest, the oldest dropped past
// KeptReleaseIDs; an empty id (a release without one) adds nothing, so
// that the ids of earlier releases are kept.
func (ids ReleaseIDs) With(id string) ReleaseIDs {
	if id == "" {
		return ids
	}
	out := append(slices.Clone(ids), id)
	if len(out) > KeptReleaseIDs {
		out = out[len(out)-KeptReleaseIDs:]
	}
	return out
}
