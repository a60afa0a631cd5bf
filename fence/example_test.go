package fence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/distlock/distlock/fence"
)

func ExampleGuard() {
	var g fence.Guard
	var file []string

	// Holder A got the lock with token 41, wrote, and paused too long; its
	// lease expired and B got the lock with token 42.
	_ = g.Do("report.txt", 41, "A", func() error { file = append(file, "A1"); return nil })
	_ = g.Do("report.txt", 42, "B", func() error { file = append(file, "B1"); return nil })

	// A wakes up and writes again: rejected, and nothing runs.
	err := g.Do("report.txt", 41, "A", func() error { file = append(file, "A2"); return nil })
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("rejected token", stale.Token, "highest", stale.Highest)
	}
	fmt.Println(file, g.Highest("report.txt"))
	// Output:
	// rejected token 41 highest 42
	// [A1 B1] 42
}

func ExampleFenceKeyFor() {
	fmt.Println(fence.FenceKeyFor("report"))
	fmt.Println(fence.FenceKeyFor("user:{42}:balance"))
	// Output:
	// {report}:fence
	// user:{42}:balance:fence
}

func ExamplePredicate() {
	fmt.Println(fence.Predicate("fence_token", "fence_holder", "$2", "$3"))
	// Output:
	// (fence_token < $2 OR (fence_token = $2 AND fence_holder = $3))
}

// staleRow stands in for a *sql.DB whose row already carries a higher token:
// the fenced UPDATE matches no row.
type staleRow struct{}

func (staleRow) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	return driver.RowsAffected(0), nil
}

func ExampleExecFenced() {
	ctx := context.Background()
	var db fence.Execer = staleRow{} // a *sql.DB, *sql.Tx or *sql.Conn

	query := "UPDATE accounts SET balance = $1, fence_token = $2, fence_holder = $3" +
		" WHERE id = $4 AND " + fence.Predicate("fence_token", "fence_holder", "$2", "$3")
	fmt.Println(query)

	var token uint64 = 1792000000000000
	err := fence.ExecFenced(ctx, db, "accounts/42", token, query, 100, int64(token), "worker-1", 42)
	fmt.Println(err)
	fmt.Println(errors.Is(err, fence.ErrStale))
	// Output:
	// UPDATE accounts SET balance = $1, fence_token = $2, fence_holder = $3 WHERE id = $4 AND (fence_token < $2 OR (fence_token = $2 AND fence_holder = $3))
	// fence: stale fencing token 1792000000000000 for "accounts/42"
	// true
}
