package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/fence"
	"github.com/distlock/distlock/fence/redisfence"
)

func ExampleGuard() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer rdb.Close()
	f := redisfence.New(rdb)

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
