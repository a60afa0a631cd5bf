package redis

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/distlock/distlock/engine"
)

var (
	//go:embed scripts/set_metadata.lua
	setMetadataSrc string

	setMetadataScript = newScript(lockSrc + takenSrc + setMetadataSrc)
)

var _ engine.MetadataSetter = (*Engine)(nil)

// SetMetadata implements engine.MetadataSetter.
func (e *Engine) SetMetadata(ctx context.Context, name, owner, metadata string) (engine.ExtendStatus, error) {
	n, err := e.batch.run(ctx, setMetadataScript, []string{e.lockKey(name), e.takenKey(name)}, owner, metadata, e.publish).Int64()
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
