package distlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
)

// AcquireAll takes several locks at once, all or nothing, with one fencing
// token per name; sets that share names never deadlock, whatever order
// their names are given in.
func ExampleClient_AcquireAll() {
	ctx := context.Background()
	client := distlock.New(memory.New())
	defer client.Close()

	set, err := client.AcquireAll(ctx, []string{"account/bob", "account/alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Release(ctx)
	fmt.Println("held:", set.Names(), set.Err() == nil)
	fmt.Println("tokens:", set.Token("account/alice") > 0, set.Token("account/bob") > 0)

	// Another set that shares a name is refused whole: it takes nothing.
	_, err = client.TryAcquireAll(ctx, []string{"account/carol", "account/bob"})
	var locked *distlock.LockedError
	if errors.As(err, &locked) {
		fmt.Println("refused, held by another owner:", locked.Name)
	}
	info, _ := client.Inspect(ctx, "account/carol")
	fmt.Println("carol held:", info.Held)
	// Output:
	// held: [account/alice account/bob] true
	// tokens: true true
	// refused, held by another owner: account/bob
	// carol held: false
}

// DoAll runs a function under every lock of a set and releases them; the
// function's context ends when any of them is lost.
func ExampleClient_DoAll() {
	ctx := context.Background()
	client := distlock.New(memory.New())
	defer client.Close()
	err := client.DoAll(ctx, []string{"stock/apples", "stock/pears"}, func(ctx context.Context) error {
		fmt.Println("moving stock")
		return nil
	})
	fmt.Println(err)
	// Output:
	// moving stock
	// <nil>
}
