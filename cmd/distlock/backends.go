package main

// The backends every build of distlock links: they register their URL
// schemes (engine.Register). backends_redis.go adds Redis; backends_full.go
// adds etcd and PostgreSQL, which the light build (-tags lite) leaves out. A
// new backend is one more blank import (here, or in backends_full.go).
import (
	_ "github.com/distlock/distlock/engine/memory" // mem://
	_ "github.com/distlock/distlock/engine/remote" // distlock://, distlocks://
)
