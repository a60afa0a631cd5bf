//go:build !lite

package fence_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

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

func ExampleRedis() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer rdb.Close()
	f := fence.NewRedis(rdb)

	// token and holder come from the distlock grant.
	var token uint64 = 1792000000000000
	holder := "worker-1"

	// SET with the mark at FenceKeyFor("report") = "{report}:fence".
	if err := f.Set(ctx, "report", "v1", token, holder); errors.Is(err, fence.ErrStale) {
		fmt.Println("lost the lock: not written")
	}

	// Any single command: keys in one {tag} share a Cluster hash slot.
	n, err := f.Exec(ctx, "{acct:7}:fence", token, holder,
		[]string{"{acct:7}:balance"}, "INCRBY", "{acct:7}:balance", 100)
	fmt.Println(n, err)
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
