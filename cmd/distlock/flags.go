package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// flagSet returns an empty flag set for the command name whose errors are
// reported by parse (not printed by package flag).
func flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// durationValue is a flag.Value for a duration with a helpful error.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration; use a number with a unit, like 30s, 1m30s or 500ms")
	}
	*v.d = d
	return nil
}

// durationFlag defines a duration flag with a default.
func durationFlag(fs *flag.FlagSet, name string, def time.Duration) *time.Duration {
	d := def
	fs.Var(durationValue{&d}, name, "")
	return &d
}

// stringFlag defines a string flag under several names.
func stringFlag(fs *flag.FlagSet, def string, names ...string) *string {
	s := def
	for _, n := range names {
		fs.StringVar(&s, n, def, "")
	}
	return &s
}

// boolFlag defines a boolean flag under several names (-v and -verbose).
func boolFlag(fs *flag.FlagSet, names ...string) *bool {
	var b bool
	for _, n := range names {
		fs.BoolVar(&b, n, false, "")
	}
	return &b
}

// switchFlag defines a boolean flag under several names that stands for
// on: once the flags are parsed, the value is on when the flag was given
// (-v, --fair), and T's zero value otherwise.
func switchFlag[T any](fs *flag.FlagSet, on T, names ...string) *T {
	v := switchValue[T]{val: new(T), on: on, given: new(bool)}
	for _, n := range names {
		fs.Var(v, n, "")
	}
	return v.val
}

// switchValue is the flag.Value of a switchFlag.
type switchValue[T any] struct {
	val   *T
	on    T
	given *bool
}

func (v switchValue[T]) String() string {
	return strconv.FormatBool(v.given != nil && *v.given)
}

func (v switchValue[T]) Set(s string) error {
	given, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.given = given
	var zero T
	*v.val = zero
	if given {
		*v.val = v.on
	}
	return nil
}

// IsBoolFlag lets the flag go without a value.
func (switchValue[T]) IsBoolFlag() bool { return true }

// parseFlags parses flags up to the first argument that is not one, and
// reports the rest and whether parsing stopped at a "--" (which it consumed).
func parseFlags(fs *flag.FlagSet, args []string) (rest []string, dashdash bool, err error) {
	if err := fs.Parse(args); err != nil {
		return nil, false, err
	}
	rest = fs.Args()
	used := len(args) - len(rest)
	return rest, used > 0 && args[used-1] == "--", nil
}

// parseInterspersed parses flags placed anywhere among the positional
// arguments (until a "--", after which everything is positional) and
// returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		rest, dashdash, err := parseFlags(fs, args)
		if err != nil {
			return nil, err
		}
		if dashdash {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseOwnerArgs parses like parseInterspersed, for commands that take an
// owner token: a token may begin with "-" (it is random base64url), so an
// argument that does not name one of the command's flags is positional.
func parseOwnerArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(pos, args[i+1:]...), nil
		}
		name, hasValue := flagName(arg)
		if name == "h" || name == "help" {
			return nil, flag.ErrHelp
		}
		f := fs.Lookup(name)
		if name == "" || f == nil {
			pos = append(pos, arg)
			continue
		}
		n := 1
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) {
			n = min(2, len(args)-i) // the flag and its value
		}
		if err := fs.Parse(args[i : i+n]); err != nil {
			return nil, err
		}
		i += n - 1
	}
	return pos, nil
}

// flagName returns the name of the flag an argument sets ("" when it is not
// shaped like a flag) and whether the argument carries its value (-ttl=1m).
func flagName(arg string) (name string, hasValue bool) {
	if len(arg) < 2 || arg[0] != '-' {
		return "", false
	}
	name = strings.TrimPrefix(arg[1:], "-")
	name, _, hasValue = strings.Cut(name, "=")
	return name, hasValue
}

// flagError turns an error from package flag into the command's exit: help
// on -h (exit 0), a usage error otherwise.
func (a *app) flagError(cmd string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		h, _ := helpFor(cmd)
		fmt.Fprint(a.stdout, h)
		return exitOK
	}
	msg := err.Error()
	// package flag names flags with one dash; the help uses two.
	msg = strings.Replace(msg, "flag -", "flag --", 1)
	msg = strings.Replace(msg, "argument: -", "argument: --", 1)
	return a.fail(cmd, usageErr("%s\nRun 'distlock help %s' for usage.", msg, cmd))
}

// usage reports a usage error of cmd, pointing at its help.
func (a *app) usage(cmd, format string, args ...any) int {
	return a.fail(cmd, usageErr(format+"\nRun 'distlock help %s' for usage.", append(args, cmd)...))
}

// positional takes the outcome of parsing a command's flags (pos, err) and
// checks the positional arguments against the synopsis names; ok is false
// when the command must return code (a flag error, help, or a wrong number
// of arguments).
func (a *app) positional(cmd string, pos []string, err error, names ...string) (code int, ok bool) {
	if err != nil {
		return a.flagError(cmd, err), false
	}
	ok, code = a.checkArgs(cmd, pos, names...)
	return code, ok
}

// checkArgs checks the number of positional arguments against the
// synopsis names (optional ones in brackets).
func (a *app) checkArgs(cmd string, pos []string, names ...string) (ok bool, code int) {
	required := 0
	for _, n := range names {
		if !strings.HasPrefix(n, "[") {
			required++
		}
	}
	switch {
	case len(pos) < required:
		return false, a.usage(cmd, "missing %s: distlock %s %s", names[len(pos)], cmd, strings.Join(names, " "))
	case len(pos) > len(names):
		return false, a.usage(cmd, "unexpected argument %q: distlock %s %s", pos[len(names)], cmd, strings.Join(names, " "))
	}
	return true, 0
}
