package etcdfence_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine/etcd/etcdfence"
)

// Two holders write one report through the guard: A with token 41, then
// B with 42. A, back from a long pause, writes again and is refused in the
// same transaction that would have written.
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{os.Getenv("ETCD_ENDPOINT")}, DialTimeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	g := etcdfence.New(cli)
	key := "example/report/" + os.Getenv("ETCD_EXAMPLE_RUN")

	_ = g.Put(ctx, key, "A1", 41, "A")
	_ = g.Put(ctx, key, "B1", 42, "B")
	err = g.Put(ctx, key, "A2", 41, "A")
	var stale *etcdfence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("rejected token", stale.Token, "highest", stale.Highest)
	}
	resp, _ := cli.Get(ctx, key)
	highest, _ := g.Highest(ctx, etcdfence.FenceKeyFor(key))
	fmt.Println(string(resp.Kvs[0].Value), highest)
	// Output:
	// rejected token 41 highest 42
	// B1 42
}
