package etcd

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Permanent implements engine.PermanentClassifier: no retry mends a request
// the cluster's authentication refused, for good: permission denied (the
// user's roles do not cover the engine's keys) or a failed authentication
// (a wrong user name or password). An expired auth token is not one of
// them: the client authenticates again by itself. Everything else (an
// unreachable member, an election, a timeout) is transient.
func (e *Engine) Permanent(err error) bool {
	for _, p := range []error{rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty} {
		if errors.Is(err, p) || sameEtcdError(err, p) {
			return true
		}
	}
	var se interface{ GRPCStatus() *status.Status }
	return errors.As(err, &se) && se.GRPCStatus().Code() == codes.PermissionDenied
}

// sameEtcdError reports whether err carries the etcd server error want
// (compared by its description: the client turns gRPC errors into
// rpctypes.EtcdError values).
func sameEtcdError(err, want error) bool {
	var ee rpctypes.EtcdError
	var we rpctypes.EtcdError
	return errors.As(err, &ee) && errors.As(want, &we) && ee.Error() == we.Error()
}
