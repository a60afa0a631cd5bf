package redis

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/distlock/distlock/engine"
)

var (
	//go:embed scripts/announce.lua
	announceSrc string
	//go:embed scripts/set_metadata.lua
	setMetadataSrc string

	announceScript    = newScript(lockSrc + announceSrc)
	setMetadataScript = newScript(lockSrc + setMetadataSrc)
)

var _ engine.MetadataSetter = (*Engine)(nil)

// announce signals a grant made with engine.AcquireRequest.Announce to the
// lock's subscribers, and marks the lock so that its release is signalled
// too. It is a second round trip, paid by an election's campaigns only;
// uncontended mutex grants never publish.
func (e *Engine) announce(ctx context.Context, name, owner string) error {
	return e.batch.run(ctx, announceScript, e.keys(name)[:1], owner, e.publish).Err()
}

// SetMetadata implements engine.MetadataSetter.
func (e *Engine) SetMetadata(ctx context.Context, name, owner, metadata string) (engine.ExtendStatus, error) {
	n, err := e.batch.run(ctx, setMetadataScript, e.keys(name)[:1], owner, metadata, e.publish).Int64()
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return engine.Extended, nil
	case 0:
		return engine.Missing, nil
	case -1:
		return engine.HeldByOther, nil
	}
	return 0, fmt.Errorf("set-metadata: unexpected reply %d", n)
}
