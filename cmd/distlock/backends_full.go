//go:build !lite

package main

// The backends in modules of their own that the default build links and the
// light build (-tags lite) leaves out: it compiles neither gRPC and the etcd
// client nor pgx.
import (
	_ "github.com/distlock/distlock/engine/etcd"      // etcd://, etcds://
	_ "github.com/distlock/distlock/engine/postgres"  // postgres://, postgresql://
	_ "github.com/distlock/distlock/engine/zookeeper" // zookeeper://
)
