package zktest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// Outside is a TB for a TestMain: ensembles started on it outlive every
// test and stop at Close. Its temporary directories live under one base
// directory, removed by Close. Fatal prints and panics.
type Outside struct {
	mu       sync.Mutex
	base     string
	n        int
	cleanups []func()
	failed   bool
}

// Helper does nothing.
func (o *Outside) Helper() {}

// Logf prints to standard error.
func (o *Outside) Logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// Fatal prints, marks o failed and panics.
func (o *Outside) Fatal(a ...any) {
	o.mu.Lock()
	o.failed = true
	o.mu.Unlock()
	fmt.Fprintln(os.Stderr, a...)
	panic(fmt.Sprint(a...))
}

// Fatalf is Fatal with a format.
func (o *Outside) Fatalf(format string, a ...any) { o.Fatal(fmt.Sprintf(format, a...)) }

// Cleanup registers f to run at Close, last registered first.
func (o *Outside) Cleanup(f func()) { o.mu.Lock(); o.cleanups = append(o.cleanups, f); o.mu.Unlock() }

// Failed reports whether Fatal was called.
func (o *Outside) Failed() bool { o.mu.Lock(); defer o.mu.Unlock(); return o.failed }

// TempDir returns a new directory under o's base directory.
func (o *Outside) TempDir() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.base == "" {
		b, err := os.MkdirTemp("", "zktest-")
		if err != nil {
			panic(err)
		}
		o.base = b
	}
	o.n++
	dir := filepath.Join(o.base, strconv.Itoa(o.n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		panic(err)
	}
	return dir
}

// Close runs the cleanups (stopping the ensembles) and removes the
// directories.
func (o *Outside) Close() {
	o.mu.Lock()
	fs, base := o.cleanups, o.base
	o.cleanups = nil
	o.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
	if base != "" {
		_ = os.RemoveAll(base)
	}
}
