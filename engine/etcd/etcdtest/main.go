package etcdtest

import (
	"fmt"
	"os"
	"slices"

	"github.com/distlock/distlock/internal/srvproc"
)

// TB is the part of testing.TB the harness uses; Main provides one outside
// a test.
type TB = srvproc.TB

// Main starts one etcd member, runs run with its client URL (a TestMain's
// m.Run, for examples that need a server) and stops the member; it returns
// run's exit code, or 1 when the member could not start.
func Main(run func(endpoint string) int) (code int) {
	tb := &mainTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(mainFatal); !ok {
				panic(r)
			}
			code = 1
		}
		tb.cleanup()
	}()
	c := Start(tb, 1)
	return run(c.Members[0].Client)
}

type mainFatal struct{}

// mainTB is a TB for Main: Fatal prints and unwinds to Main.
type mainTB struct {
	cleanups []func()
	dirs     []string
	failed   bool
}

func (t *mainTB) Helper()                        {}
func (t *mainTB) Logf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (t *mainTB) Fatal(a ...any)                 { t.failed = true; fmt.Fprintln(os.Stderr, a...); panic(mainFatal{}) }
func (t *mainTB) Fatalf(format string, a ...any) { t.Fatal(fmt.Sprintf(format, a...)) }
func (t *mainTB) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *mainTB) Failed() bool                   { return t.failed }

func (t *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

func (t *mainTB) cleanup() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	for _, d := range t.dirs {
		_ = os.RemoveAll(d)
	}
}
