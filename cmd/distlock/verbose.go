package main

import (
	"fmt"
	"io"
)

// notes prints a command's progress reports (-v, --verbose) on standard
// error; its zero value (no -v) prints nothing.
type notes struct{ w io.Writer }

// say prints one report line (format ends with its newline).
func (n *notes) say(format string, args ...any) {
	if n.w != nil {
		fmt.Fprintf(n.w, format, args...)
	}
}
