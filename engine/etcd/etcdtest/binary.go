// Package etcdtest runs real etcd servers for tests: one member or a
// cluster, on free loopback ports with temporary data dirs, built from the
// Go module proxy at a pinned version and cached between runs.
package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
)

// Version is the etcd server version the tests run.
const Version = "v3.7.3"

// BinaryEnv names an environment variable that, when set, is the path of
// the etcd binary to run instead of the cached build.
const BinaryEnv = "DISTLOCK_ETCD_BIN"

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of the etcd binary: $DISTLOCK_ETCD_BIN, or the
// cached build at <user cache dir>/distlock/etcd-<Version>/etcd, which it
// builds first when missing (go build of go.etcd.io/etcd/server/v3 at
// Version in a temporary module: about a minute; a file lock keeps
// concurrent test binaries from building twice).
func Binary(t TB) string {
	t.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	buildOnce.Do(func() { binPath, buildErr = Build() })
	if buildErr != nil {
		t.Fatalf("etcd binary: %v", buildErr)
	}
	return binPath
}

// CachePath returns where the cached build lives.
func CachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "distlock", "etcd-"+Version, "etcd"), nil
}

// Build returns the path of the cached etcd build, building it first when
// it is missing, as Binary does (without $DISTLOCK_ETCD_BIN): for warming
// the cache before the tests run (./etcdtest/etcdbuild, scripts/test -warm).
func Build() (string, error) {
	path, err := CachePath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(path); err == nil {
		return path, nil // built by another process meanwhile
	}
	tmp, err := os.MkdirTemp("", "etcd-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	tools := "//go:build tools\n\npackage tools\n\nimport _ \"go.etcd.io/etcd/server/v3\"\n"
	if err := os.WriteFile(filepath.Join(tmp, "tools.go"), []byte(tools), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{
		{"mod", "init", "etcdbuild"},
		{"get", "go.etcd.io/etcd/server/v3@" + Version},
		{"build", "-o", path + ".tmp", "go.etcd.io/etcd/server/v3"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %v: %v\n%s", args, err, out)
		}
	}
	return path, os.Rename(path+".tmp", path)
}
