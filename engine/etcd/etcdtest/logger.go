package etcdtest

import "go.uber.org/zap"

// nopLogger keeps the etcd client's retry warnings out of test output.
func nopLogger() *zap.Logger { return zap.NewNop() }
