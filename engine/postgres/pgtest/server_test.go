package pgtest

import (
	"errors"
	"testing"
)

// TestPortTakenNoticed: a server whose port answers for another server's
// data directory is not taken as ready (errPortTaken, which makes Start
// pick another port), so a test never runs against another test's server.
func TestPortTakenNoticed(t *testing.T) {
	a, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	b := &Server{Dir: t.TempDir(), Port: a.Port, bin: a.bin}
	if err := b.waitReady(); !errors.Is(err, errPortTaken) {
		t.Fatalf("a port answered by another server: %v, want errPortTaken", err)
	}
	if err := a.waitReady(); err != nil {
		t.Fatalf("the server's own port: %v", err)
	}
}
