//go:build full

package main

// The backends of the full build (-tags full), in their own modules: the
// default build leaves them out, so that the first build compiles neither
// gRPC and the etcd client nor pgx.
import (
	_ "github.com/distlock/distlock/engine/etcd"      // etcd://, etcds://
	_ "github.com/distlock/distlock/engine/postgres"  // postgres://, postgresql://
	_ "github.com/distlock/distlock/engine/zookeeper" // zookeeper://
)
