package engine

import (
	"slices"
	"strconv"
	"testing"
)

// TestReleaseIDs: the ids of the last KeptReleaseIDs releases are kept,
// oldest first; an empty id is no release id and adds nothing.
func TestReleaseIDs(t *testing.T) {
	var ids ReleaseIDs
	if ids.Has("") || ids.Has("r0") {
		t.Fatal("an empty list has an id")
	}
	ids = ids.With("")
	if len(ids) != 0 {
		t.Fatalf("an empty id was added: %q", ids)
	}
	for i := range KeptReleaseIDs + 2 {
		ids = ids.With("r" + strconv.Itoa(i))
	}
	if len(ids) != KeptReleaseIDs || ids[0] != "r2" || ids[len(ids)-1] != "r"+strconv.Itoa(KeptReleaseIDs+1) {
		t.Fatalf("after %d releases: %q, want the last %d", KeptReleaseIDs+2, ids, KeptReleaseIDs)
	}
	if ids.Has("r1") || !ids.Has("r2") || ids.Has("") {
		t.Fatalf("Has on %q", ids)
	}
	before := slices.Clone(ids)
	_ = ids[:len(ids)-1].With("x") // With does not write into the list it was called on
	if !slices.Equal(ids, before) {
		t.Fatalf("With changed its receiver: %q, was %q", ids, before)
	}
}
