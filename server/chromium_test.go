//go:build unix

package server_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chromiumHint tells how to get the browser the dashboard test needs.
const chromiumHint = "the dashboard test needs headless Chromium: install it with " +
	"'apt-get install -y chromium' (scripts/test and .ci/run do this when it is missing)"

// findChromium returns the path of a Chromium binary, or fails the test
// with the install hint (never skips).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal(chromiumHint)
	return ""
}

// browser is a headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ended by NUL bytes on file
// descriptors 3 and 4), so no WebSocket library is needed.
type browser struct {
	cmd     *exec.Cmd
	in      *os.File // our end of Chromium's fd 3: commands
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpReply
	done    chan struct{} // closed when the reader stops
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser starts Chromium with a fresh profile under dir; it is
// stopped, with every process it started, when the test ends.
func startBrowser(t *testing.T, bin, dir string) *browser {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "chromium.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--mute-audio", "--hide-scrollbars", "--window-size=1280,900",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fd 3: its commands, fd 4: its answers
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v; %s", bin, err, chromiumHint)
	}
	cmdR.Close()
	outW.Close()
	b := &browser{cmd: cmd, in: cmdW, waiting: map[int]chan cdpReply{}, done: make(chan struct{})}
	go b.read(outR)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_, _ = b.call("", "Browser.close", nil, 2*time.Second)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group: renderers, zygotes
		<-exited
		cmdW.Close()
		outR.Close()
		logFile.Close()
	})
	return b
}

// read dispatches the answers; events are ignored.
func (b *browser) read(f *os.File) {
	defer close(b.done)
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one command (to a page session, or to the browser when
// session is "") and waits for its result.
func (b *browser) call(session, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-b.done:
		return nil, fmt.Errorf("%s: the browser went away", method)
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s: no answer within %v", method, timeout)
	}
}

// open opens url in a new tab and returns the tab's session.
func (b *browser) open(t *testing.T, url string) string {
	t.Helper()
	res, err := b.call("", "Target.createTarget", map[string]any{"url": url}, patience)
	if err != nil {
		t.Fatal(err)
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &target)
	res, err = b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, patience)
	if err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &att)
	return att.SessionID
}

// eval evaluates a JavaScript expression in the page and returns its value.
func (b *browser) eval(t *testing.T, session, expr string, out any) {
	t.Helper()
	res, err := b.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, patience)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.ExceptionDetails != nil {
		t.Fatalf("evaluating %s: %v %v", expr, err, r.ExceptionDetails)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		t.Fatalf("evaluating %s: %v (%s)", expr, err, r.Result.Value)
	}
}

// screenshot saves a PNG of the page.
func (b *browser) screenshot(t *testing.T, session, path string) {
	t.Helper()
	res, err := b.call(session, "Page.captureScreenshot", map[string]any{"format": "png"}, patience)
	if err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	_ = json.Unmarshal(res, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 1000 {
		t.Fatalf("screenshot: %v (%d bytes)", err, len(png))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
