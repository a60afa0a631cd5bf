package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestExitCodesDocumented: the help texts and docs/CLI.md say what each exit
// code means with no backend named where any backend is meant: the
// overview's and docs/CLI.md's tables list every code distlock exits with
// itself (leader's 1 for nobody leads, 65 for a foreign key at a lock's
// place), and run -h lists 65, 128+N for a signal during the wait and 76
// for a lock no longer held at its release.
func TestExitCodesDocumented(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{exitCodesHelp, "nobody leads (leader)"},
		{exitCodesHelp, "\n  65 "},
		{exitCodesHelp, "ended the wait for the lock"},
		{runHelp, "\n  65 "},
		{runHelp, "ended the wait for the lock"},
		{runHelp, "no longer held at its release"},
		{runHelp, "every host that shares the lock\nbackend"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("help text lacks %q:\n%s", c.want, c.text)
		}
	}
	for _, text := range []string{exitCodesHelp, runHelp} {
		for _, wrong := range []string{"Redis unreachable", "shares the Redis", "(Redis\ndid not confirm"} {
			if strings.Contains(text, wrong) {
				t.Errorf("help text says %q, of every backend:\n%s", wrong, text)
			}
		}
	}
	doc := readDoc(t, "../../docs/CLI.md")
	table := doc[strings.Index(doc, "## Exit codes"):]
	for _, code := range []string{"0", "1", "64", "65", "69", "75", "76"} {
		if !strings.Contains(table, "\n| "+code+" |") {
			t.Errorf("docs/CLI.md's exit codes lack %s", code)
		}
	}
	if row := table[strings.Index(table, "\n| 1 |"):]; !strings.Contains(row[:strings.Index(row[1:], "\n")+1], "`leader`") {
		t.Errorf("docs/CLI.md's exit code 1 leaves out leader")
	}
}

// TestCLIDocContents: docs/CLI.md's table of contents links every section
// (## heading) of it.
func TestCLIDocContents(t *testing.T) {
	doc := readDoc(t, "../../docs/CLI.md")
	toc := doc[:strings.Index(doc, "\n## ")]
	for _, h := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(doc, -1) {
		anchor := strings.ToLower(strings.NewReplacer(" ", "-", ",", "", ":", "", "`", "").Replace(h[1]))
		if !strings.Contains(toc, "](#"+anchor+")") {
			t.Errorf("docs/CLI.md's contents lack %q (#%s)", h[1], anchor)
		}
	}
}

// TestPackageDocBackends: the command's package doc names every backend
// the default build speaks, not Redis and the distlock server alone.
func TestPackageDocBackends(t *testing.T) {
	src := readDoc(t, "main.go")
	pkgDoc := src[:strings.Index(src, "package main")]
	for _, b := range []string{"Redis", "etcd", "PostgreSQL", "ZooKeeper", "distlock server", "mem://"} {
		if !strings.Contains(strings.ReplaceAll(pkgDoc, "\n// ", " "), b) {
			t.Errorf("main.go's package doc does not name %s", b)
		}
	}
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
