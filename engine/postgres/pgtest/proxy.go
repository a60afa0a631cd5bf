package pgtest

import "github.com/distlock/distlock/internal/stallproxy"

// Proxy forwards TCP connections to a server and can stall them: Pause
// stops every byte in both directions (as a stopped process or a
// partition would), Resume lets them through again, Stall does both
// around a duration.
type Proxy = stallproxy.Proxy

// NewProxy listens on a loopback port and forwards to target (host:port).
func NewProxy(target string) (*Proxy, error) { return stallproxy.Listen(target) }
