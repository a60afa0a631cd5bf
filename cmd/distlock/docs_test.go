package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestServeFlagsDocumented: every flag distlock serve -h lists has a row
// in docs/CLI.md's table of serve flags, so the two cannot drift.
func TestServeFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "## distlock serve")
	if start < 0 {
		t.Fatal("docs/CLI.md has no distlock serve section")
	}
	section = section[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	flags := regexp.MustCompile(`(?m)^  (--[a-z-]+)`).FindAllStringSubmatch(serveHelp, -1)
	if len(flags) < 5 {
		t.Fatalf("found %d flags in serve -h", len(flags))
	}
	for _, f := range flags {
		if !strings.Contains(section, "| `"+f[1]+" ") && !strings.Contains(section, "| `"+f[1]+"`") {
			t.Errorf("docs/CLI.md's serve flags lack %s", f[1])
		}
	}
}
