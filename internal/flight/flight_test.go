package flight

import (
	"context"
	"errors"
	"testing"
)

func start(f func()) { go f() }

// TestAnsweredBeforeWaitEnds: the caller takes an answer that comes while
// it waits; settle is not called.
func TestAnsweredBeforeWaitEnds(t *testing.T) {
	boom := errors.New("boom")
	v, gone, err := Send(context.Background(), start, func() (int, error) { return 7, boom }, func(int, error) {
		t.Error("settle called for an answer the caller took")
	})
	if v != 7 || gone || err != boom {
		t.Fatalf("Send = %d, %v, %v; want 7, false, boom", v, gone, err)
	}
}

// TestLeftBeforeAnswer: when the wait ends first, Send returns at once
// (gone) while the request is still out, and settle gets its answer.
func TestLeftBeforeAnswer(t *testing.T) {
	wait, cancel := context.WithCancel(context.Background())
	release, settled := make(chan struct{}), make(chan int, 1)
	cancel()
	v, gone, err := Send(wait, start, func() (int, error) {
		<-release // still out when the wait ends
		return 9, nil
	}, func(v int, err error) { settled <- v })
	if !gone || v != 0 || err != nil {
		t.Fatalf("Send = %d, %v, %v; want 0, true, nil", v, gone, err)
	}
	close(release)
	if got := <-settled; got != 9 {
		t.Fatalf("settle got %d, want the request's answer 9", got)
	}
}
