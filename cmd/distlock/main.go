// Command distlock takes distributed locks from the shell.
//
//	distlock run --wait 0 nightly-report -- ./report.sh
//
// runs ./report.sh only while this host holds the lock "nightly-report", and
// stops it (SIGTERM to its process group, then SIGKILL) if the lock is lost.
// Other commands take and release locks for shell scripts (acquire, extend,
// release), inspect and repair them (status, list, leaks, force-release),
// and show fencing tokens at work with nothing installed (demo).
//
// distlock serve runs the lock server (HTTP API, dashboard, metrics), on an
// embedded engine or on any backend below.
//
// The lock backend of the other commands is named by URL (DISTLOCK_URL or
// --backend): one Redis server, a Redis Cluster, Redis behind Sentinel,
// Redlock over several Redis nodes, an etcd v3 cluster, PostgreSQL, a
// ZooKeeper ensemble, a distlock server, or the embedded engine (mem://);
// DISTLOCK_REDIS, DISTLOCK_SERVER, DISTLOCK_ETCD, DISTLOCK_POSTGRES and
// DISTLOCK_ZOOKEEPER name one kind each. The light build (-tags lite)
// speaks the embedded engine and the distlock server only. See
// docs/CLI.md, or run distlock help.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == guardArg {
		os.Exit(runGuard(os.Args[2:]))
	}
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(a.main(os.Args[1:]))
}

// app is one invocation of distlock: its standard streams and environment.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// command is one subcommand.
type command struct {
	name    string
	summary string             // one line, for the command list
	help    string             // what 'distlock help NAME' and 'distlock NAME -h' print
	run     func([]string) int // parses its own flags; returns the exit code
}

// commands lists the subcommands in the order the help shows them: the
// one table that dispatch (main), the help (overview, helpFor) and the
// tests read.
func (a *app) commands() []command {
	return []command{
		{"run", "run a command while holding a lock; stop it if the lock is lost", runHelp, a.cmdRun},
		{"elect", "run a command only while elected leader; campaign again after a loss", electHelp, a.cmdElect},
		{"leader", "show the leader of an election, or follow its changes", leaderHelp, a.cmdLeader},
		{"acquire", "take a lock for a shell script and print its tokens", acquireHelp, a.cmdAcquire},
		{"extend", "extend a lock taken with acquire", extendHelp, a.cmdExtend},
		{"release", "release a lock taken with acquire", releaseHelp, a.cmdRelease},
		{"status", "show who holds a lock", statusHelp, a.cmdStatus},
		{"list", "list the locks held", listHelp, a.cmdList},
		{"leaks", "find lock keys that will never expire", leaksHelp, a.cmdLeaks},
		{"force-release", "free a lock whoever holds it (a repair)", forceReleaseHelp, a.cmdForceRelease},
		{"limit", "change the number of permits of a semaphore", limitHelp, a.cmdLimit},
		{"serve", "run the lock server: HTTP API, live dashboard, /metrics", serveHelp, a.cmdServe},
		{"postgres", "postgres init: make the schema the PostgreSQL backend needs", postgresHelp, a.cmdPostgres},
		{"demo", "watch fencing tokens stop a paused worker (nothing to install)", demoHelp, a.cmdDemo},
		{"help", "show help for a command", helpHelp, a.cmdHelp},
	}
}

// helpFor returns the help text of the command cmd, from the table.
func helpFor(cmd string) (string, bool) {
	for _, c := range (*app)(nil).commands() {
		if c.name == cmd {
			return c.help, true
		}
	}
	return "", false
}

// main runs the command named by args[0] and returns the exit code.
func (a *app) main(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, a.overview())
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(a.stdout, a.overview())
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(a.stdout, "distlock (development version)")
		return exitOK
	}
	for _, c := range a.commands() {
		if c.name == name {
			return c.run(args[1:])
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if strings.HasPrefix(name, "-") {
		msg = fmt.Sprintf("flags go after the command, as in: distlock run %s ...", name)
	}
	return a.fail("", &cliError{code: exitUsage, msg: msg + "\nRun 'distlock help' to see the commands."})
}

// isHelpFlag reports whether arg asks for help (-h, -help, --help).
func isHelpFlag(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// cmdHelp prints the overview, or one command's help.
func (a *app) cmdHelp(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stdout, a.overview())
		return exitOK
	}
	topic := args[0]
	if isHelpFlag(topic) {
		topic = "help"
	}
	if h, ok := helpFor(topic); ok {
		fmt.Fprint(a.stdout, h)
		return exitOK
	}
	return a.fail("help", &cliError{code: exitUsage,
		msg: fmt.Sprintf("no command %q\nRun 'distlock help' to see the commands.", args[0])})
}

// overview is the top-level help.
func (a *app) overview() string {
	var b strings.Builder
	b.WriteString(overviewHead)
	for _, c := range a.commands() {
		fmt.Fprintf(&b, "  %-14s %s\n", c.name, c.summary)
	}
	b.WriteString(overviewTail)
	return b.String()
}
