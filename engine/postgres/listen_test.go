package postgres_test

import (
	"context"
	"testing"
	"time"
)

// TestListenerLossWakesSubscribers: when the listening connection is lost,
// every subscription is woken with no release at all (notifications sent
// while it is down are lost: a waiter must re-check), and woken again once
// it LISTENs anew.
func TestListenerLossWakesSubscribers(t *testing.T) {
	const schema = "listen_loss"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := newEngine(t, newPool(t, "application_name=listenloss"), schema)
	plain, err := eng.Subscribe(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	waiter, err := eng.SubscribeWaiter(ctx, "y", "w1")
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if n := terminate(t, ctx, "listenloss", false); n == 0 {
		t.Fatal("no session to terminate")
	}
	for _, c := range []<-chan struct{}{plain.C(), waiter.C()} {
		select {
		case <-c:
		case <-ctx.Done():
			t.Fatal("a subscription slept through the listener's loss")
		}
	}
}
