package redis

import (
	"context"
	_ "embed"
	"errors"
	"strings"

	"github.com/distlock/distlock/engine"
)

// The administration of shared locks: force-release and listing (List and
// Leaks find a shared lock by its state key, distlock:{NAME}:s).

//go:embed scripts/shared_force_release.lua
var sharedForceReleaseSrc string

var sharedForceReleaseScript = newScript(sharedLib + takenSrc + sharedForceReleaseSrc)

var (
	_ engine.ForceReleaser  = (*Engine)(nil)
	_ engine.HolderReleaser = (*Engine)(nil)
)

// ForceRelease implements engine.ForceReleaser: it frees the mutex name
// and every holder of the shared lock name, whoever holds them, and wakes
// their waiters. Every holder freed is told HeldByOther by its next
// renewal (scripts/taken.lua).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.forceRelease(ctx, name, "")
}

// ForceReleaseHolder implements engine.HolderReleaser: as ForceRelease,
// but only the holder owner is freed (the mutex only when owner holds it).
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	if owner == "" {
		return false, nil // nobody holds as "" (the scripts read "" as everyone)
	}
	return e.forceRelease(ctx, name, owner)
}

// forceRelease frees name's mutex and shared holders, or only owner's
// hold when owner is not "".
func (e *Engine) forceRelease(ctx context.Context, name, owner string) (bool, error) {
	k := e.keys(name)
	n, err := forceReleaseScript.Run(ctx, e.client, []string{k[0], k[1], k[2], k[3], e.takenKey(name)}, e.publish, owner).Int64()
	if err != nil {
		return false, err
	}
	freed, err := e.batch.run(ctx, sharedForceReleaseScript, e.sharedTakenKeys(name), e.fenceMS, e.publish, owner).Int64()
	return n == 1 || freed > 0, err
}

// sharedName returns the name of the shared lock whose state key is key,
// or "".
func (e *Engine) sharedName(key string) string {
	rest, ok := strings.CutPrefix(key, e.prefix+"{")
	if !ok {
		return ""
	}
	n, _ := strings.CutSuffix(rest, "}:s")
	if n == rest {
		return ""
	}
	return n
}

// inspectSharedMany describes each named shared lock, keeping the ones held
// or waited for.
func (e *Engine) inspectSharedMany(ctx context.Context, names []string) ([]engine.Info, error) {
	var infos []engine.Info
	for _, name := range names {
		info, err := e.inspectShared(ctx, name)
		if isReplyError(err) || errors.Is(err, errNotALock) {
			continue // not a distlock shared lock
		}
		if err != nil {
			return nil, err
		}
		if info.Kind != 0 && (info.Held || info.Waiters > 0) {
			infos = append(infos, info)
		}
	}
	return infos, nil
}
