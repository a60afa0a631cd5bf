package main

// The backends every build of distlock links: they register their URL
// schemes (engine.Register). backends_redis.go adds Redis and backends_full.go
// etcd, PostgreSQL and ZooKeeper, which the light build (-tags lite) leaves
// out: it compiles no backend client, so that the README's first command
// builds fast. A new backend is one more blank import (in backends_full.go).
import (
	_ "github.com/distlock/distlock/engine/memory" // mem://
	_ "github.com/distlock/distlock/engine/remote" // distlock://, distlocks://
)
