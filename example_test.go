package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/fence"
)

var store fence.Guard // the resource: it checks tokens where the data lives

func writeInvoices(ctx context.Context) error {
	client := distlock.New(memory.New()) // or redisengine.New(redisClient)
	defer client.Close()

	lease, err := client.Acquire(ctx, "invoices", distlock.WithTTL(10*time.Second))
	if err != nil {
		return err // *WaitError, *BackendError, ...: use errors.Is/As
	}
	defer lease.Release(ctx)

	// lease.Context() is cancelled the moment the lease is lost.
	return store.Do("invoices", lease.Token(), lease.Owner(), func() error {
		return saveInvoices(lease.Context())
	})
}

func saveInvoices(ctx context.Context) error {
	fmt.Println("saving invoices, lease held:", ctx.Err() == nil)
	return nil
}

// The README's example: a lease that renews itself, tells its holder when
// it is lost, and fences every write with its token.
func Example() {
	fmt.Println(writeInvoices(context.Background()))
	// Output:
	// saving invoices, lease held: true
	// <nil>
}

// Do runs a function under the lock and releases it; the function's context
// is cancelled if the lease is lost.
func ExampleClient_Do() {
	ctx := context.Background()
	client := distlock.New(memory.New())
	defer client.Close()
	err := client.Do(ctx, "nightly-report", func(ctx context.Context) error {
		fmt.Println("generating the report")
		return nil
	}, distlock.WithMetadata("host-a"))
	fmt.Println(err)
	// Output:
	// generating the report
	// <nil>
}

// TryAcquire fails at once with a *LockedError that says how long the
// holder's lease has left.
func ExampleClient_TryAcquire() {
	ctx := context.Background()
	eng := memory.New()
	a, b := distlock.New(eng), distlock.New(eng)
	defer a.Close()
	defer b.Close()
	if _, err := a.Acquire(ctx, "deploy", distlock.WithTTL(time.Minute)); err != nil {
		panic(err)
	}
	_, err := b.TryAcquire(ctx, "deploy")
	var locked *distlock.LockedError
	fmt.Println(errors.Is(err, distlock.ErrLocked), errors.As(err, &locked) && locked.TTL > 50*time.Second)
	// Output: true true
}

// A lease on Redis. Create the go-redis client with ContextTimeoutEnabled so
// that context deadlines bound every command, waits included.
func ExampleNew_redis() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	eng, err := redisengine.New(rdb)
	if err != nil {
		panic(err)
	}
	client := distlock.New(eng)
	defer client.Close()
	defer eng.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the wait budget
	defer cancel()
	lease, err := client.Acquire(ctx, "orders:42")
	if err != nil {
		return
	}
	defer lease.Release(context.Background())
	select {
	case <-lease.Done():
		fmt.Println("lost:", lease.Err())
	default:
	}
}

// Re-attach a lease in another process from its name and owner token.
func ExampleClient_Attach() {
	ctx := context.Background()
	eng := memory.New()
	first, second := distlock.New(eng), distlock.New(eng)
	defer first.Close()
	defer second.Close()
	lease, _ := first.Acquire(ctx, "migration", distlock.WithAutoRenew(false))
	owner := lease.Owner() // hand this to the other process

	again, err := second.Attach(ctx, "migration", owner)
	if err != nil {
		panic(err)
	}
	fmt.Println(again.Token() == lease.Token(), again.Release(ctx))
	// Output: true <nil>
}

// Open takes a backend by URL; the engine packages a program imports
// register their schemes (mem:// here: engine/memory, imported above).
func ExampleOpen() {
	ctx := context.Background()
	client, err := distlock.Open(ctx, "mem://") // or "redis://:secret@10.0.0.5:6379/0", "etcd://a:2379,b:2379", ...
	if err != nil {
		fmt.Println(err) // errors.Is(err, distlock.ErrInvalidArgument) for a URL that cannot be used
		return
	}
	defer client.Close() // closes the connections Open made
	lease, err := client.TryAcquire(ctx, "nightly-report")
	fmt.Println(err, lease.Token() > 0)
	_, err = distlock.Open(ctx, "mem://?ttl=1s")
	fmt.Println(errors.Is(err, distlock.ErrInvalidArgument))
	// Output:
	// <nil> true
	// true
}
