module github.com/distlock/distlock/adapters/gocron

go 1.26.8

require (
	github.com/distlock/distlock v0.0.0
	github.com/go-co-op/gocron/v2 v2.21.2
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/distlock/distlock => ../..
