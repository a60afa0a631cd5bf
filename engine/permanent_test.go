package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// notMigrated says of itself that no retry mends it, as a PostgreSQL
// schema never migrated does.
type notMigrated struct{}

func (notMigrated) Error() string   { return "not migrated" }
func (notMigrated) Permanent() bool { return true }

// TestIsPermanent: refused input, an unsupported feature, a closed engine
// and errors that say so are permanent, wrapped or not; a joined error is
// only when each part is (a quorum: one node refusing for good does not
// keep a majority from agreeing later); network failures and context
// errors are transient.
func TestIsPermanent(t *testing.T) {
	eng := memory.New()
	defer eng.Close()
	transient := errors.New("connection refused")
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{transient, false},
		{context.DeadlineExceeded, false},
		{&engine.ArgumentError{Arg: "name", Reason: "bad"}, true},
		{fmt.Errorf("acquire: %w", &engine.ArgumentError{Arg: "name", Reason: "bad"}), true},
		{engine.ErrUpgrade, true},
		{errors.ErrUnsupported, true},
		{fmt.Errorf("node a: %w", engine.ErrClosed), true},
		{notMigrated{}, true},
		{fmt.Errorf("acquire: %w", notMigrated{}), true},
		{errors.Join(notMigrated{}, engine.ErrClosed), true},
		{errors.Join(notMigrated{}, transient), false},
		{fmt.Errorf("no quorum: %w, %w", transient, notMigrated{}), false},
	}
	for _, tc := range cases {
		if got := engine.IsPermanent(eng, tc.err); got != tc.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
