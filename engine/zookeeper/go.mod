module github.com/distlock/distlock/engine/zookeeper

go 1.26.8

replace github.com/distlock/distlock => ../..

require (
	github.com/distlock/distlock v0.0.0
	github.com/go-zookeeper/zk v1.0.4
)

// go-zookeeper v1.0.4 with its reconnect data race fixed (engine/zookeeper/third_party/zk/PATCHED.md).
replace github.com/go-zookeeper/zk => ./third_party/zk
