package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server"
)

// Environment variables of distlock serve and of the server backend.
const (
	envTokens = "DISTLOCK_TOKENS" // serve: ROLE:TOKEN entries
	envToken  = "DISTLOCK_TOKEN"  // commands on DISTLOCK_SERVER: the bearer token
)

const defaultListen = "127.0.0.1:7420"

// cmdServe implements distlock serve.
func (a *app) cmdServe(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return a.serve(ctx, args, nil)
}

// serve runs the server until ctx ends; ready, if not nil, is called with
// the server's URL once it listens.
func (a *app) serve(ctx context.Context, args []string, ready func(url string)) int {
	const cmd = "serve"
	f, code, ok := a.serveFlags(cmd, args)
	if !ok {
		return code
	}
	log := slog.New(slog.NewTextHandler(a.stderr, nil))
	reg := server.NewRegistry()
	metrics, err := server.NewMetrics(reg)
	if err != nil {
		return a.fail(cmd, err)
	}
	opts, tokens, err := a.serverOptions(f, log, metrics)
	if err != nil {
		return a.fail(cmd, err)
	}

	u, setting, err := a.serveURL(f.backends)
	if err != nil {
		return a.fail(cmd, err)
	}
	b, err := a.openURL(ctx, u, setting, engine.WithNodeErrors(metrics.NodeError))
	if err != nil {
		return a.fail(cmd, err)
	}
	eng, desc := b.eng, b.where
	closeEngine := func() { _ = eng.Close() }
	defer closeEngine()
	defer sweep(ctx, eng, log)()
	opts = append(opts, server.WithEngineName(desc))
	if f.backendID != "" {
		opts = append(opts, server.WithBackendID(f.backendID))
	}
	srv, err := server.New(eng, opts...)
	var ae *distlock.ArgumentError
	if errors.As(err, &ae) {
		return a.usage(cmd, "--%s: %s", strings.ReplaceAll(ae.Arg, " ", "-"), ae.Reason)
	}
	if err != nil {
		return a.fail(cmd, err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		_ = srv.Close()
		return a.fail(cmd, &cliError{code: exitFailed, msg: fmt.Sprintf("cannot listen on %s: %v.\nPick another address with --listen HOST:PORT.", f.listen, err)})
	}
	scheme := "http"
	if srv.TLS() {
		scheme = "https"
	}
	url := scheme + "://" + ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	a.announce(url, desc, srv, tokens)
	if ready != nil {
		ready(url)
	}

	select {
	case err := <-served:
		_ = srv.Close()
		return a.fail(cmd, &cliError{code: exitFailed, msg: err.Error()})
	case <-ctx.Done():
	}
	return a.shutdown(cmd, srv, served, f.grace)
}

// serveOptions holds distlock serve's flags.
type serveOptions struct {
	listen, backendID             string
	backends                      map[string]string // the backend flags given (serveBackends): flag name → value
	tokensFile, certFile, keyFile string
	public                        bool
	maxWaiters, maxPerName        int
	maxWait, readTimeout, grace   time.Duration
}

// serveBackend is one of distlock serve's backend flags, which exclude
// each other.
type serveBackend struct {
	flag  string
	toURL func(string) (string, error) // nil: the flag's value is the URL
}

// serveBackends lists distlock serve's backend flags: flags, messages and
// serveURL read this list.
func (a *app) serveBackends() []serveBackend {
	return []serveBackend{{"backend", nil}, {"redis", nil}, {"redlock", nil}, {"etcd", etcdURL}, {"postgres", a.postgresURL}}
}

// serveBackendFlags names the backend flags for messages: "--backend,
// --redis, ... and --postgres" (last is "and" or "or").
func (a *app) serveBackendFlags(last string) string {
	var names []string
	for _, b := range a.serveBackends() {
		names = append(names, "--"+b.flag)
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + last + " " + names[len(names)-1]
}

// serveFlags parses distlock serve's arguments; when they cannot be served
// it returns the exit code, having said why.
func (a *app) serveFlags(cmd string, args []string) (serveOptions, int, bool) {
	fs := flagSet(cmd)
	listen := stringFlag(fs, defaultListen, "listen")
	backends := make(map[string]*string)
	for _, b := range a.serveBackends() {
		backends[b.flag] = stringFlag(fs, "", b.flag)
	}
	backendID := stringFlag(fs, "", "backend-id")
	tokensFile := stringFlag(fs, "", "tokens-file")
	certFile := stringFlag(fs, "", "tls-cert")
	keyFile := stringFlag(fs, "", "tls-key")
	public := boolFlag(fs, "insecure-public")
	maxWaiters := fs.Int("max-waiters", server.DefaultMaxWaiters, "")
	maxPerName := fs.Int("max-waiters-per-name", server.DefaultMaxWaitersPerName, "")
	maxWait := durationFlag(fs, "max-wait", server.DefaultMaxWait)
	readTimeout := durationFlag(fs, "read-timeout", server.DefaultBodyTimeout)
	grace := durationFlag(fs, "shutdown-timeout", 10*time.Second)
	pos, err := parseInterspersed(fs, args)
	if code, ok := a.positional(cmd, pos, err); !ok {
		return serveOptions{}, code, false
	}
	f := serveOptions{listen: *listen, backends: make(map[string]string), backendID: *backendID, tokensFile: *tokensFile, certFile: *certFile, keyFile: *keyFile,
		public: *public, maxWaiters: *maxWaiters, maxPerName: *maxPerName, maxWait: *maxWait, readTimeout: *readTimeout, grace: *grace}
	for flag, v := range backends {
		if *v != "" {
			f.backends[flag] = *v
		}
	}
	if msg := a.serveConflict(f); msg != "" {
		return serveOptions{}, a.usage(cmd, "%s", msg), false
	}
	return f, 0, true
}

// serveConflict says what is wrong with f, or "" when it can be served.
func (a *app) serveConflict(f serveOptions) string {
	given := len(f.backends)
	switch {
	case f.backends["redis"] != "" && f.backends["redlock"] != "":
		return "--redis and --redlock exclude each other: one Redis, or Redlock over several"
	case given > 1:
		return a.serveBackendFlags("and") + " exclude each other: one backend"
	case f.backendID != "" && given == 0:
		return "--backend-id names a shared backend, and the embedded engine's locks are this process's own: give " + a.serveBackendFlags("or")
	case (f.certFile == "") != (f.keyFile == ""):
		return "--tls-cert and --tls-key go together"
	case f.maxWaiters < 1 || f.maxPerName < 1:
		return "--max-waiters and --max-waiters-per-name must be positive"
	case f.maxWait <= 0:
		return "--max-wait must be positive"
	case f.readTimeout <= 0:
		return "--read-timeout must be positive"
	}
	if tokensGiven := f.tokensFile != "" || strings.TrimSpace(a.getenv(envTokens)) != ""; !tokensGiven && !f.public && !loopbackAddr(f.listen) {
		return fmt.Sprintf("--listen %s is not a loopback address, and no tokens are given: anyone who reaches it could take "+
			"and break every lock.\nGive --tokens-file (or %s), or pass --insecure-public to allow it anyway", f.listen, envTokens)
	}
	return ""
}

// serverOptions are the server's options from f: logging, metrics,
// limits, timeouts, bearer tokens (nil when none are given) and TLS.
func (a *app) serverOptions(f serveOptions, log *slog.Logger, metrics *server.Metrics) ([]server.Option, *server.Tokens, error) {
	opts := []server.Option{
		server.WithLogger(log), server.WithMetrics(metrics),
		server.WithMaxWaiters(f.maxWaiters, f.maxPerName), server.WithMaxWait(f.maxWait),
		server.WithTimeouts(server.Timeouts{Header: f.readTimeout, Body: f.readTimeout}),
	}
	tokens, err := a.serveTokens(f.tokensFile)
	if err != nil {
		return nil, nil, err
	}
	if tokens != nil {
		opts = append(opts, server.WithTokens(tokens))
	}
	if f.public {
		opts = append(opts, server.WithInsecurePublic())
	}
	if f.certFile != "" {
		cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, nil, usageErr("cannot load the TLS certificate: %v", err)
		}
		opts = append(opts, server.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	return opts, tokens, nil
}

// announce tells the operator where the server listens, on which engine,
// and with what authentication.
func (a *app) announce(url, desc string, srv *server.Server, tokens *server.Tokens) {
	fmt.Fprintf(a.stderr, "distlock serve: listening on %s (dashboard: %s/, API: %s/v1, metrics: %s/metrics)\n", url, url, url, url)
	fmt.Fprintf(a.stderr, "distlock serve: engine: %s\n", desc)
	if srv.Embedded() {
		fmt.Fprintln(a.stderr, "distlock serve: this process is the lock authority: its locks live in its memory and die with it (they are dropped when it stops or crashes); "+
			"no other server shares them, so clients cannot go on through another server.")
	}
	if tokens == nil {
		fmt.Fprintln(a.stderr, "distlock serve: authentication: off (give --tokens-file or "+envTokens+" to require bearer tokens)")
	} else {
		fmt.Fprintf(a.stderr, "distlock serve: authentication: %d bearer token(s)\n", tokens.Len())
	}
}

// shutdown stops srv once the command's context ended: waiting requests
// are answered shutting_down, and requests still running after grace are
// cut off.
func (a *app) shutdown(cmd string, srv *server.Server, served <-chan error, grace time.Duration) int {
	fmt.Fprintln(a.stderr, "distlock serve: shutting down: waiting requests are answered shutting_down")
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		fmt.Fprintf(a.stderr, "distlock serve: requests still running after %v were cut off: %v\n", grace, err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return a.fail(cmd, &cliError{code: exitFailed, msg: err.Error()})
	}
	if srv.Embedded() {
		fmt.Fprintln(a.stderr, "distlock serve: stopped; the embedded engine's locks are dropped now")
	} else {
		fmt.Fprintln(a.stderr, "distlock serve: stopped; nothing was released: the locks on Redis stay with their holders")
	}
	return exitOK
}

// loopbackAddr reports whether the host of a listen address is a loopback
// address (or localhost).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveTokens reads the bearer tokens from --tokens-file or DISTLOCK_TOKENS
// (nil: none).
func (a *app) serveTokens(file string) (*server.Tokens, error) {
	if file != "" {
		t, err := server.LoadTokensFile(file)
		if err != nil {
			return nil, usageErr("--tokens-file: %v", err)
		}
		return t, nil
	}
	if env := strings.TrimSpace(a.getenv(envTokens)); env != "" {
		t, err := server.ParseTokens(env)
		if err != nil {
			return nil, usageErr("%s: %v", envTokens, err)
		}
		return t, nil
	}
	return nil, nil
}

// serveURL is the URL of the server's engine, from the backend flag given
// (serveBackends; they exclude each other), and the flag it came from: the
// embedded engine (mem://) when none is given.
func (a *app) serveURL(given map[string]string) (u, setting string, err error) {
	for _, b := range a.serveBackends() {
		v := given[b.flag]
		if v == "" {
			continue
		}
		if b.toURL != nil {
			v, err = b.toURL(v)
		}
		return v, "--" + b.flag, err
	}
	return "mem://", "the embedded engine", nil
}

// sweeper is an engine that keeps rows of expired leases until swept (the
// PostgreSQL engine's Sweep).
type sweeper interface {
	Sweep(ctx context.Context, limit int) (int, error)
}

// sweepEvery is how often distlock serve sweeps such an engine.
const sweepEvery = time.Minute

// sweep sweeps eng every sweepEvery while the server runs, when it is a
// sweeper; the returned function stops it and waits for it.
func sweep(ctx context.Context, eng engine.Engine, log *slog.Logger) (stop func()) {
	sw, ok := eng.(sweeper)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := sw.Sweep(ctx, 10000); err != nil && ctx.Err() == nil {
				log.Warn("sweeping expired leases failed", "err", err)
			} else if n > 0 {
				log.Info("swept expired leases", "rows", n)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
