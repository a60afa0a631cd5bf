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

// SetMetadata implements engine.MetadataSetter: the hold of r.Owner, of
// the grant of r.Token when not 0 (set_metadata.lua compares it with the
// lock's token in the same script as the write).
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	n, err := e.batch.run(ctx, setMetadataScript, []string{e.lockKey(r.Name), e.takenKey(r.Name)}, r.Owner, r.Metadata, e.publish, tokenArg(r.Token)).Int64()
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
