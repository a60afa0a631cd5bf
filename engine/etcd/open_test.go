package etcd

import (
	"context"
	"errors"
	"testing"

	"github.com/distlock/distlock/engine"
)

// TestOpenBadURL: etcd URLs that cannot be used are typed errors, made
// before any client exists. (The CLI's etcd tests open etcd:// on a real
// member.)
func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{"etcd://a:2379,,b:2379", "etcd://a:2379/path", "etcd://a:2379?typo=1", "etcds://a:2379?dial_timeout=-1s"} {
		eng, err := engine.Open(context.Background(), u)
		if err == nil {
			_ = eng.Close()
		}
		if !errors.Is(err, engine.ErrBadURL) {
			t.Errorf("Open(%q) = %v, want ErrBadURL", u, err)
		}
	}
}
