package lab

import (
	"testing"
	"time"

	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/safety/check"
	"github.com/distlock/distlock/safety/history"
)

// TestServerProbe: the probe on a real redis-server, through the checker.
// A server stopped (SIGSTOP) past ProbeTimeout with nothing to say why is
// measured as answering no faster than the timeout (ServerLag, what a
// starved server looks like); the same stop recorded as a fault on the
// server is left out, and so are a stop while the lab holds the probe off
// the server and a kill and restart (no answer, and the first answer after
// it not counted).
func TestServerProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server and stops it for about 2 s")
	}
	s := redistest.Start(t)
	lag := lagprobe.Start()
	rec := history.NewRecorder(nil)
	p := startServerProbe(rec, []probeTarget{redisTarget("node0", s.Addr())})
	defer p.stop()
	stop := func(d time.Duration) (from, to time.Time) {
		t.Helper()
		from = time.Now()
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d)
		if err := s.Resume(); err != nil {
			t.Fatal(err)
		}
		return from, time.Now()
	}
	quiet := func() { time.Sleep(200 * time.Millisecond) }
	fault := func(from, to time.Time) history.Event {
		return history.Event{Kind: history.KindFault, Class: 7, Target: "node0", Start: history.Mono(from), End: history.Mono(to)}
	}

	quiet()
	from1, to1 := stop(ProbeTimeout + 200*time.Millisecond) // no fault recorded: a starved server, as far as anyone knows
	quiet()
	from2, to2 := stop(300 * time.Millisecond) // recorded below as a fault
	quiet()
	release := p.hold("node0")
	stop(300 * time.Millisecond) // the lab's own, not recorded: held
	release()
	quiet()
	if err := s.Kill(); err != nil { // not recorded: no answer to count
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	quiet()
	p.stop()
	machine := lag.Done()

	events := append(rec.Events(), fault(from2, to2))
	windows, counted := 0, 0
	for _, e := range events {
		if e.Kind == history.KindServerLag {
			windows++
			if e.Lag > 0 {
				counted++
			}
		}
	}
	if windows < 4 || counted < 3 {
		t.Fatalf("%d server-lag events, %d with an answer counted: the probe recorded too little", windows, counted)
	}
	unexplained := check.Run(events, check.Params{TTL: time.Second})
	if unexplained.ServerLag < ProbeTimeout || unexplained.ServerLag > 2*ProbeTimeout || unexplained.SlowServer != "node0" {
		t.Errorf("server stopped %v without a fault: server lag %v (%q), want the timeout %v", to1.Sub(from1).Round(time.Millisecond), unexplained.ServerLag, unexplained.SlowServer, ProbeTimeout)
	}
	r := check.Run(append(events, fault(from1, to1)), check.Params{TTL: time.Second})
	switch {
	case r.ServerLag >= ProbeTimeout:
		// A stop's unanswered request (it counts as the timeout) was
		// not left out.
		t.Errorf("server lag %v with every stop explained (a fault, a hold, a kill), want the quiet answers only", r.ServerLag)
	case r.ServerLag >= 250*time.Millisecond:
		// Slow answers outside the stops: the redis-server itself was
		// starved (a loaded machine starves the servers while this
		// process may go on), which is what the probe is for.
		t.Skipf("server lag %v with every stop explained, below the timeout: the server answered slowly outside the stops (this process's scheduling delay %v)", r.ServerLag, machine)
	}
	t.Logf("server lag %v with every stop explained, %v with the first one not (%d windows; this process's scheduling delay %v)", r.ServerLag, unexplained.ServerLag, windows, machine)
}
