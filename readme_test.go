package distlock_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExampleIsTested: the Go code in README.md is a verbatim part of
// example_test.go, so the README's example compiles and runs in the suite.
func TestReadmeExampleIsTested(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no Go example")
	}
	code, _, _ := strings.Cut(rest, "```")
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), code) {
		t.Fatalf("README.md's example is not in example_test.go verbatim:\n%s", code)
	}
	if n := strings.Count(strings.TrimSpace(code), "\n") + 1; n > 25 {
		t.Fatalf("README example has %d lines; keep it about 20", n)
	}
}
