package redistest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

const (
	logName      = "redis.log"  // redis-server --logfile, in the server's dir
	outName      = "stdout.log" // captured stdout and stderr, in the server's dir
	logTailLines = 20           // trailing log lines an error includes
	logTailBytes = 16 << 10     // most bytes read from each log for an error
)

// logMark remembers how long the server's log files are, so that an error
// can quote only what one start attempt wrote.
type logMark struct {
	paths   []string
	offsets []int64
}

// logMark records the current sizes of the server's log files.
func (s *Server) logMark() logMark {
	m := logMark{paths: []string{filepath.Join(s.dir, logName), filepath.Join(s.dir, outName)}}
	for _, p := range m.paths {
		var off int64
		if fi, err := os.Stat(p); err == nil {
			off = fi.Size()
		}
		m.offsets = append(m.offsets, off)
	}
	return m
}

// tail returns the last lines written to each log since the mark, formatted
// to be appended to an error message.
func (m logMark) tail() string {
	var b strings.Builder
	for i, path := range m.paths {
		if t := tailFile(path, m.offsets[i]); t != "" {
			b.WriteString("\n--- last lines of " + path + " ---\n")
			b.WriteString(t)
		}
	}
	return b.String()
}

// tailFile returns up to logTailLines trailing non-empty lines written to the
// file at path after offset from. Errors yield an empty string.
func tailFile(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	from = max(from, fi.Size()-logTailBytes)
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}
