package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
)

// notes prints a command's progress reports (-v, --verbose) on standard
// error; without the flag it prints nothing.
type notes struct{ w io.Writer }

// say prints one report line (format ends with its newline).
func (n *notes) say(format string, args ...any) {
	if n.w != nil {
		fmt.Fprintf(n.w, format, args...)
	}
}

// verboseFlag defines -v and --verbose: once they are parsed, the notes
// print on w when the flag was given.
func verboseFlag(fs *flag.FlagSet, w io.Writer) *notes {
	n := &notes{}
	for _, name := range []string{"v", "verbose"} {
		fs.Var(notesValue{n: n, w: w}, name, "")
	}
	return n
}

// notesValue is the flag.Value of -v and --verbose, a boolean flag.
type notesValue struct {
	n *notes
	w io.Writer
}

func (v notesValue) String() string {
	if v.n == nil {
		return "false"
	}
	return strconv.FormatBool(v.n.w != nil)
}

func (v notesValue) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	v.n.w = nil
	if on {
		v.n.w = v.w
	}
	return nil
}

// IsBoolFlag lets -v go without a value.
func (notesValue) IsBoolFlag() bool { return true }
