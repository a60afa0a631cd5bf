// Package etcdfence checks distlock fencing tokens for data kept in etcd:
// a write is one etcd transaction that compares the resource's high-water
// mark with the writer's token and, only if the token is not stale, applies
// the write and raises the mark. No other client can write in between.
//
// The rule is package fence's: a write is accepted iff its token is at
// least the highest accepted for the resource so far, and a tie only from
// the holder that wrote with that token before. Tokens from any distlock
// engine work; with engine/etcd they are revisions of the lock's cluster.
//
// (The guard lives in the etcd engine's module, not in package fence, so
// that users of package fence never download the etcd client. Its errors
// mirror fence's: StaleError, ErrStale, ErrInvalidArgument.)
package etcdfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/distlock/distlock/engine"
)

// ErrStale is matched (errors.Is) by every *StaleError.
var ErrStale = errors.New("etcdfence: stale fencing token")

// ErrInvalidArgument is wrapped by the errors for bad input (an empty
// resource or holder, the token 0 or a token above engine.MaxToken, 2^53-1,
// which no grant carries; an op that could write a fence key); nothing is
// sent then.
var ErrInvalidArgument = errors.New("etcdfence: invalid argument")

// StaleError reports a write that the guard rejected: nothing was written.
type StaleError struct {
	Resource string // the fence key
	Token    uint64 // the rejected token
	Highest  uint64 // the highest token accepted for Resource
	Holder   string // the holder that tried to write
}

func (e *StaleError) Error() string {
	msg := fmt.Sprintf("etcdfence: stale fencing token %d for %q from holder %q", e.Token, e.Resource, e.Holder)
	if e.Highest == e.Token {
		return msg + ": token already used by another holder"
	}
	return msg + ": highest accepted is " + strconv.FormatUint(e.Highest, 10)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Guard runs fenced writes on an etcd cluster. The high-water mark of a
// resource is the value of its fence key: the token as 20 decimal digits
// (so that etcd's byte-wise comparison orders tokens), "|", and the holder.
// The fence key is part of the resource: it has no lease and must live as
// long as the data it guards. A Guard is safe for concurrent use.
type Guard struct {
	cli *clientv3.Client
}

// New returns a Guard on cli. It does not take ownership of cli.
func New(cli *clientv3.Client) *Guard { return &Guard{cli: cli} }

// FenceKeyFor returns the fence key the Put and Delete helpers use for key.
func FenceKeyFor(key string) string { return key + fenceSuffix }

// fenceSuffix ends every fence key FenceKeyFor makes: a data key of that
// name would be another resource's mark, so the guard never writes one as
// data.
const fenceSuffix = "/.fence"

// mark is the stored form of a high-water mark.
func mark(token uint64, holder string) string {
	return fmt.Sprintf("%020d|%s", token, holder)
}

// parseMark reads a stored mark.
func parseMark(v string) (uint64, string, error) {
	digits, holder, ok := strings.Cut(v, "|")
	token, err := strconv.ParseUint(digits, 10, 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("etcdfence: bad high-water mark %q", v)
	}
	return token, holder, nil
}

// Txn applies ops in one etcd transaction iff token is not stale for
// fenceKey, and raises fenceKey's mark to token and holder in the same
// transaction. It returns the responses of ops (etcd's own). On a stale
// token nothing is written and the error is a *StaleError. A token above
// engine.MaxToken (2^53-1) is refused with ErrInvalidArgument, unsent: no
// grant carries one, and a mark raised to it would refuse every real holder
// of the resource. An op that could write a fence key is refused with
// ErrInvalidArgument, and nothing is sent: a put or delete of fenceKey or
// of any key ending in "/.fence" (another resource's fence key), a delete
// of a range of keys (WithPrefix, WithRange, WithFromKey: a range may hold
// fence keys; delete the keys one by one), and such an op inside a nested
// transaction (OpTxn), whose branches are checked alike.
func (g *Guard) Txn(ctx context.Context, fenceKey string, token uint64, holder string, ops ...clientv3.Op) ([]*pb.ResponseOp, error) {
	switch {
	case fenceKey == "":
		return nil, fmt.Errorf("%w: empty fence key", ErrInvalidArgument)
	case token == 0:
		return nil, fmt.Errorf("%w: fencing token 0 for %q", ErrInvalidArgument, fenceKey)
	case token > engine.MaxToken:
		return nil, fmt.Errorf("%w: fencing token %d for %q is above 2^53-1, the largest token a grant carries", ErrInvalidArgument, token, fenceKey)
	case holder == "":
		return nil, fmt.Errorf("%w: empty holder for %q", ErrInvalidArgument, fenceKey)
	}
	if err := checkOps(fenceKey, ops); err != nil {
		return nil, err
	}
	m := mark(token, holder)
	write := append(append([]clientv3.Op(nil), ops...), clientv3.OpPut(fenceKey, m))
	// Three ways to be accepted, tried in one transaction (etcd has no OR):
	// no mark yet; a lower token; the same token from the same holder.
	tie := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(fenceKey), "=", m)},
		write, []clientv3.Op{clientv3.OpGet(fenceKey)})
	lower := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Value(fenceKey), "<", mark(token, ""))},
		write, []clientv3.Op{tie})
	resp, err := g.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(fenceKey), "=", 0)).
		Then(write...).Else(lower).Commit()
	if err != nil {
		return nil, fmt.Errorf("etcdfence: write for %q: %w", fenceKey, err)
	}
	if resp.Succeeded {
		return resp.Responses[:len(ops)], nil
	}
	r2 := resp.Responses[0].GetResponseTxn()
	if r2.Succeeded {
		return r2.Responses[:len(ops)], nil
	}
	r3 := r2.Responses[0].GetResponseTxn()
	if r3.Succeeded {
		return r3.Responses[:len(ops)], nil
	}
	kvs := r3.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("etcdfence: write for %q: the mark vanished during the check", fenceKey)
	}
	highest, _, err := parseMark(string(kvs[0].Value))
	if err != nil {
		return nil, err
	}
	return nil, &StaleError{Resource: fenceKey, Token: token, Highest: highest, Holder: holder}
}

// Put sets key to value iff token is not stale for key's resource (fence
// key FenceKeyFor(key)).
func (g *Guard) Put(ctx context.Context, key, value string, token uint64, holder string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	}
	_, err := g.Txn(ctx, FenceKeyFor(key), token, holder, clientv3.OpPut(key, value))
	return err
}

// Highest returns the highest token accepted for fenceKey, 0 if none was.
func (g *Guard) Highest(ctx context.Context, fenceKey string) (uint64, error) {
	resp, err := g.cli.Get(ctx, fenceKey)
	if err != nil {
		return 0, fmt.Errorf("etcdfence: read high-water mark %q: %w", fenceKey, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	token, _, err := parseMark(string(resp.Kvs[0].Value))
	return token, err
}

// checkOps refuses ops that could write a fence key (see Txn): no
// resource's data may overwrite or erase another's mark, or its own.
func checkOps(fenceKey string, ops []clientv3.Op) error {
	for _, op := range ops {
		k := string(op.KeyBytes())
		switch {
		case op.IsTxn():
			_, then, els := op.Txn()
			if err := checkOps(fenceKey, then); err != nil {
				return err
			}
			if err := checkOps(fenceKey, els); err != nil {
				return err
			}
		case op.IsDelete() && len(op.RangeBytes()) > 0:
			return fmt.Errorf("%w: an op deletes the range of keys from %q, which may hold fence keys (keys ending in %q); delete keys one by one", ErrInvalidArgument, k, fenceSuffix)
		case (op.IsPut() || op.IsDelete()) && (k == fenceKey || strings.HasSuffix(k, fenceSuffix)):
			return fmt.Errorf("%w: an op writes %q, a fence key (keys ending in %q are fence keys)", ErrInvalidArgument, k, fenceSuffix)
		}
	}
	return nil
}
