package zkfence_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine/zookeeper/zkfence"
)

// Two holders write one config znode through the guard: A with token 41,
// then B with 42. A, back from a long pause, writes again and is refused
// in the multi-op that would have written.
func Example() {
	ctx := context.Background()
	conn, _, err := zk.Connect(strings.Split(os.Getenv("ZK_SERVERS"), ","), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	g := zkfence.New(conn)
	defer g.Close()
	path := fmt.Sprintf("/example-config-%x", rand.Uint64())

	_ = g.Set(ctx, path, []byte("A1"), 41, "A")
	_ = g.Set(ctx, path, []byte("B1"), 42, "B")
	err = g.Set(ctx, path, []byte("A2"), 41, "A")
	var stale *zkfence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("rejected token", stale.Token, "highest", stale.Highest)
	}
	data, _, _ := conn.Get(path)
	highest, _ := g.Highest(ctx, zkfence.FenceNodeFor(path))
	fmt.Println(string(data), highest)
	// Output:
	// rejected token 41 highest 42
	// B1 42
}
