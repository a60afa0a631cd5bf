package redis

import (
	"context"
	_ "embed"
	"strings"

	"github.com/distlock/distlock/engine"
)

// The administration of shared locks: force-release and listing (List and
// Leaks find a shared lock by its state key, distlock:{NAME}:s).

//go:embed scripts/shared_force_release.lua
var sharedForceReleaseSrc string

var sharedForceReleaseScript = newScript(sharedSrc + sharedForceReleaseSrc)

var _ engine.ForceReleaser = (*Engine)(nil)

// ForceRelease implements engine.ForceReleaser: it frees the mutex name
// and every holder of the shared lock name, whoever holds them, and wakes
// their waiters. A shared lock's holders are told HeldByOther by their next
// renewal (scripts/shared_force_release.lua).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	n, err := forceReleaseScript.Run(ctx, e.client, e.keys(name)[:4], e.publish).Int64()
	if err != nil {
		return false, err
	}
	freed, err := e.runShared(ctx, sharedForceReleaseScript, name).Int64()
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
		info, err := e.InspectShared(ctx, name)
		if isReplyError(err) {
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
