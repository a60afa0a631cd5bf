package fence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/fence"
)

// The database/sql types that ExecFenced is meant for.
var (
	_ fence.Execer = (*sql.DB)(nil)
	_ fence.Execer = (*sql.Tx)(nil)
	_ fence.Execer = (*sql.Conn)(nil)
)

func TestPredicate(t *testing.T) {
	for _, tc := range []struct {
		tokCol, holderCol, tokPh, holderPh, want string
	}{
		{"fence_token", "fence_holder", "$2", "$3",
			"(fence_token < $2 OR (fence_token = $2 AND fence_holder = $3))"},
		{"t", "h", "?", "?",
			"(t < ? OR (t = ? AND h = ?))"},
		{"accounts.fence_token", "accounts.fence_holder", ":token", ":holder",
			"(accounts.fence_token < :token OR (accounts.fence_token = :token AND accounts.fence_holder = :holder))"},
		{"_tok9", "H", "@p1", "@p2",
			"(_tok9 < @p1 OR (_tok9 = @p1 AND H = @p2))"},
		{"tok", "holder", "?1", ":2", "(tok < ?1 OR (tok = ?1 AND holder = :2))"},
	} {
		if got := fence.Predicate(tc.tokCol, tc.holderCol, tc.tokPh, tc.holderPh); got != tc.want {
			t.Errorf("Predicate(%q, %q, %q, %q) =\n%s\nwant\n%s", tc.tokCol, tc.holderCol, tc.tokPh, tc.holderPh, got, tc.want)
		}
	}
}

func TestPredicatePanicsOnInvalidInput(t *testing.T) {
	for _, args := range [][4]string{
		{"fence_token; DROP TABLE x", "h", "$1", "$2"},
		{"t", "", "$1", "$2"},
		{"t", "h", "$1 OR 1=1", "$2"},
		{"t", "h", "$1", ""},
		{`"t"`, "h", "$1", "$2"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Predicate%q did not panic", args)
				}
			}()
			fence.Predicate(args[0], args[1], args[2], args[3])
		}()
	}
}

func TestValidIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"fence_token": true, "a.b": true, "s.t.c": true, "_x1": true, "X": true,
		"": false, "1a": false, "a.": false, ".a": false, "a..b": false, "a.1b": false,
		"a b": false, "a-b": false, `"a"`: false, "a;": false, "é": false, "a)": false,
	} {
		if got := fence.ValidIdentifier(s); got != want {
			t.Errorf("ValidIdentifier(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidPlaceholder(t *testing.T) {
	for s, want := range map[string]bool{
		"?": true, "?1": true, "$1": true, "$12": true, ":1": true, ":tok": true, "@p1": true, "$tok": true,
		"": false, "$": false, ":": false, "@": false, "@1": false, "??": false, "?a": false,
		"$1 ": false, ":a.b": false, "x": false, "$1)": false, "'": false,
	} {
		if got := fence.ValidPlaceholder(s); got != want {
			t.Errorf("ValidPlaceholder(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestExecFenced(t *testing.T) {
	ctx := context.Background()
	const q = "UPDATE docs SET body = $1, fence_token = $2, fence_holder = $3 WHERE id = 7 AND " +
		"(fence_token < $2 OR (fence_token = $2 AND fence_holder = $3))"
	db, st := openFake(t)

	st.set(1, nil, nil)
	if err := fence.ExecFenced(ctx, db, "docs/7", 12, q, "body", int64(12), "alice"); err != nil {
		t.Fatalf("1 row affected: %v", err)
	}
	query, args := st.last()
	if query != q || len(args) != 3 || args[0] != "body" || args[1] != int64(12) || args[2] != "alice" {
		t.Fatalf("ran %q %v", query, args)
	}

	st.set(3, nil, nil)
	if err := fence.ExecFenced(ctx, db, "docs/7", 12, q); err != nil {
		t.Fatalf("3 rows affected: %v", err)
	}

	st.set(0, nil, nil)
	err := fence.ExecFenced(ctx, db, "docs/7", 11, q, "late", int64(11), "bob")
	wantStale(t, err, fence.StaleError{Resource: "docs/7", Token: 11})

	errExec := errors.New("connection reset")
	st.set(1, errExec, nil)
	err = fence.ExecFenced(ctx, db, "docs/7", 13, q)
	if !errors.Is(err, errExec) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("exec error: got %v", err)
	}

	errRows := errors.New("rows affected unsupported")
	st.set(0, nil, errRows)
	err = fence.ExecFenced(ctx, db, "docs/7", 13, q)
	if !errors.Is(err, errRows) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("RowsAffected error: got %v", err)
	}
}

func TestExecFencedTxAndConn(t *testing.T) {
	ctx := context.Background()
	db, st := openFake(t)
	st.set(0, nil, nil)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = fence.ExecFenced(ctx, tx, "r", 5, "UPDATE r SET x = 1")
	wantStale(t, err, fence.StaleError{Resource: "r", Token: 5})
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st.set(1, nil, nil)
	if err := fence.ExecFenced(ctx, conn, "r", 6, "UPDATE r SET x = 2"); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.last(); q != "UPDATE r SET x = 2" {
		t.Fatalf("ran %q", q)
	}
}

func TestExecFencedInvalidArguments(t *testing.T) {
	ctx := context.Background()
	db, st := openFake(t)
	st.set(1, nil, nil)
	for name, call := range map[string]func() error{
		"empty resource": func() error { return fence.ExecFenced(ctx, db, "", 1, "UPDATE r SET x = 1") },
		"token 0":        func() error { return fence.ExecFenced(ctx, db, "r", 0, "UPDATE r SET x = 1") },
		"token 2^53":     func() error { return fence.ExecFenced(ctx, db, "r", engine.MaxToken+1, "UPDATE r SET x = 1") },
		"empty query":    func() error { return fence.ExecFenced(ctx, db, "r", 1, "") },
		"nil db":         func() error { return fence.ExecFenced(ctx, nil, "r", 1, "UPDATE r SET x = 1") },
	} {
		if err := call(); !errors.Is(err, fence.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	if q, _ := st.last(); q != "" {
		t.Fatalf("an invalid call ran %q", q)
	}
}

// The test double below is a database/sql driver whose Exec reports a
// programmed number of rows affected (or errors) and records what it ran.

// fakeState is what one fake database reports and records.
type fakeState struct {
	mu      sync.Mutex
	rows    int64
	execErr error
	rowsErr error
	query   string
	args    []any
}

// set programs the next results.
func (s *fakeState) set(rows int64, execErr, rowsErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows, s.execErr, s.rowsErr = rows, execErr, rowsErr
}

// last returns the last statement run.
func (s *fakeState) last() (string, []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.query, s.args
}

var (
	fakeMu     sync.Mutex
	fakeStates = map[string]*fakeState{}
)

func init() { sql.Register("fencetest", fakeDriver{}) }

// openFake opens a fresh fake database for t.
func openFake(t *testing.T) (*sql.DB, *fakeState) {
	t.Helper()
	st := &fakeState{}
	fakeMu.Lock()
	fakeStates[t.Name()] = st
	fakeMu.Unlock()
	db, err := sql.Open("fencetest", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		fakeMu.Lock()
		delete(fakeStates, t.Name())
		fakeMu.Unlock()
	})
	return db, st
}

type fakeDriver struct{}

func (fakeDriver) Open(name string) (driver.Conn, error) {
	fakeMu.Lock()
	defer fakeMu.Unlock()
	st := fakeStates[name]
	if st == nil {
		return nil, errors.New("fencetest: unknown database " + name)
	}
	return &fakeConn{st: st}, nil
}

type fakeConn struct{ st *fakeState }

func (c *fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fencetest: Prepare not supported")
}
func (c *fakeConn) Close() error              { return nil }
func (c *fakeConn) Begin() (driver.Tx, error) { return fakeTx{}, nil }

// ExecContext implements driver.ExecerContext.
func (c *fakeConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.execErr != nil {
		return nil, c.st.execErr
	}
	c.st.query = query
	c.st.args = nil
	for _, a := range args {
		c.st.args = append(c.st.args, a.Value)
	}
	return fakeResult{rows: c.st.rows, err: c.st.rowsErr}, nil
}

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

type fakeResult struct {
	rows int64
	err  error
}

func (r fakeResult) LastInsertId() (int64, error) { return 0, errors.New("fencetest: no insert id") }
func (r fakeResult) RowsAffected() (int64, error) { return r.rows, r.err }
