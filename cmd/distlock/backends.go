package main

// The backends every build of distlock links: they register their URL
// schemes (engine.Register). backends_redis.go adds Redis; backends_full.go
// adds etcd and PostgreSQL with -tags full. A new backend is one more blank
// import (here, or in a file of its build tag).
import (
	_ "github.com/distlock/distlock/engine/memory" // mem://
	_ "github.com/distlock/distlock/engine/remote" // distlock://, distlocks://
)
