//go:build !lite

package fence

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/internal/luascript"
)

//go:embed redis_fence.lua
var fenceLua string

// fenceScript is the fenced write, run with EVALSHA by the digest the
// server computed (SHA-1 is not computed in Go: it works under
// GODEBUG=fips140=only) and, when the server answers NOSCRIPT, with EVAL.
var fenceScript = luascript.New(fenceLua)

// Redis checks fencing tokens for data kept in Redis. The high-water mark of
// a resource lives in a fence key next to the data: a hash with the fields
// "token" (decimal) and "holder". Each write is one Lua script that compares
// the token with the mark and runs the write command only if the token is not
// stale, so no other client can write in between.
//
// The fence key is not per-write garbage: it is part of the resource and
// lives as long as it does. It has no TTL; an expiring mark would let a stale
// holder write again. Delete it only when the resource is gone for good.
// Each write that runs also leaves a small key that expires after
// ResendWindow (see Exec).
//
// A Redis is safe for concurrent use. It is left out of builds with the
// tag lite (the CLI's light build, which compiles no Redis client); every
// other build has it.
type Redis struct {
	c      redis.UniversalClient
	id     string        // random, names this Redis in write ids
	writes atomic.Uint64 // numbers its writes
}

// NewRedis returns a Redis that runs its scripts on c: a *redis.Client, a
// *redis.ClusterClient, a *redis.Ring or any other redis.UniversalClient.
// It does not take ownership of c.
func NewRedis(c redis.UniversalClient) *Redis {
	var b [idBytes]byte
	_, _ = rand.Read(b[:])
	return &Redis{c: c, id: hex.EncodeToString(b[:])}
}

// ResendWindow is how long Redis.Exec remembers that a write ran, so that a
// copy of it resent by the client is not run again. It must be longer than
// the time between the first copy running and the last resend: with
// go-redis's defaults (ReadTimeout 3 s, retry backoff up to 512 ms,
// MaxRetries 3) that is at most about 11 s; a client configured to retry for
// longer must stay well within a minute. Each write that runs costs one
// small key for this long: roughly 100 bytes plus the length of the fence
// key, so a resource written 1,000 times a second keeps some 60,000 of
// them, about 6 to 10 MB.
const ResendWindow = time.Minute

// idBytes is the length of a Redis's random id, which names it in its write
// ids as 2*idBytes lowercase hex digits.
const idBytes = 8

// writeIDSuffix separates the fence key from the write id in the name of a
// write id key.
const writeIDSuffix = ":write:"

// writeID returns an id unique to one Exec call. go-redis resends a command
// whose reply was lost; the copy carries the same id, and the script does
// not run the write twice.
func (r *Redis) writeID() string {
	return r.id + "-" + strconv.FormatUint(r.writes.Add(1), 10)
}

// writeIDKey returns the key that records, for ResendWindow, that the write
// with the given id ran. It is in fenceKey's Redis Cluster hash slot:
//
//   - If fenceKey has a hash tag, the id key is fenceKey+":write:"+id and
//     shares that tag.
//   - Otherwise, if fenceKey contains no '}', it is
//     "{"+fenceKey+"}:write:"+id: the whole fence key becomes the tag.
//   - Otherwise (a fence key such as "a}b" that has no hash tag but cannot
//     be wrapped in one), it is "{"+t+"}"+fenceKey+":write:"+id with the
//     tag t that FenceKeyFor uses for such keys, which hashes to fenceKey's
//     slot.
func writeIDKey(fenceKey, id string) string {
	if _, ok := hashTag(fenceKey); ok {
		return fenceKey + writeIDSuffix + id
	}
	if !strings.Contains(fenceKey, "}") {
		return "{" + fenceKey + "}" + writeIDSuffix + id
	}
	t := strconv.FormatUint(uint64(slotTags()[keySlot(fenceKey)]), 36)
	return "{" + t + "}" + fenceKey + writeIDSuffix + id
}

// isWriteIDKey reports whether key has the shape of a write id key (see
// writeIDKey): it ends in ":write:" and a write id, that is 2*idBytes
// lowercase hex digits, "-" and a decimal number (see writeID).
func isWriteIDKey(key string) bool {
	i := strings.LastIndex(key, writeIDSuffix)
	if i < 0 {
		return false
	}
	id, n, ok := strings.Cut(key[i+len(writeIDSuffix):], "-")
	return ok && len(id) == hex.EncodedLen(idBytes) && strings.Trim(id, "0123456789abcdef") == "" &&
		n != "" && strings.Trim(n, "0123456789") == ""
}

// checkKeys refuses, with an error wrapping ErrInvalidArgument, a key of a
// fenced command that the guard keeps for itself: fenceKey (this write's
// mark, whatever its name), any key ending in ":fence" (every fence key
// FenceKeyFor makes does: another resource's mark) and any write id key.
// A command that wrote a mark could erase or lower it, after which a stale
// token passes; one that wrote a write id key could make a write look
// applied already, or a resent copy look new.
func checkKeys(fenceKey string, keys []string) error {
	for _, k := range keys {
		switch {
		case k == fenceKey:
			return invalid("fence key %q is among the keys of its command", fenceKey)
		case strings.HasSuffix(k, fenceKeySuffix):
			return invalid("key %q of the command for %q is a fence key (every key ending in %q is one): no fenced write may touch a mark", k, fenceKey, fenceKeySuffix)
		case isWriteIDKey(k):
			return invalid("key %q of the command for %q is a write id key of the guard", k, fenceKey)
		}
	}
	return nil
}

// resendWindowMS is ResendWindow in milliseconds, for the script's SET PX.
var resendWindowMS = strconv.FormatInt(ResendWindow.Milliseconds(), 10)

// Exec runs the command args (e.g. "SET", key, value or "SADD", key, member or
// "INCRBY", key, 1) atomically iff token is not stale for fenceKey, and then
// records token and holder as fenceKey's high-water mark. It returns the
// command's reply as go-redis decodes it (string, int64, []any, ...); a nil
// reply, e.g. from SET ... GET on a missing key, is returned as nil. Replies
// pass through Lua in RESP2 form, also on RESP3 connections: integers beyond
// ±2^53 lose precision, and maps arrive as flat arrays.
//
// A write is applied once per call even when the client resends it after a
// lost reply (go-redis does, by default), whatever was written in between,
// by the same holder or a newer one: the resent copy returns a nil reply and
// no error, since the first copy's reply is gone. Each call carries a write
// id, unique to it; when the write runs, the script sets a key named after
// the id (in fenceKey's hash slot) that expires after ResendWindow (one
// minute), and a call whose id key exists is answered as a resent copy
// before anything else is checked. So each write that runs leaves one small
// key for a minute. A copy resent after that (far beyond go-redis's retry
// times) would be judged, and could run, again; so could one whose key an
// eviction policy (maxmemory-policy volatile-* or allkeys-*) removed early.
//
// keys lists every key the command touches. On Redis Cluster they must be in
// the same hash slot as fenceKey, e.g. by sharing a {tag}; see FenceKeyFor.
// None of them may be a key the guard keeps: fenceKey itself, any key ending
// in ":fence" (every fence key FenceKeyFor makes does, so this is every
// resource's mark; name the fence keys you choose yourself so too), or a
// write id key (one ending in ":write:" and a write id). A command that
// could write one could erase or lower a resource's mark, after which an
// older token passes. The guard sees only keys: a command that touches a
// key it does not list, or none (FLUSHDB), is not checked.
//
// On a stale token Exec runs nothing and returns a *StaleError whose Resource
// is fenceKey and whose Highest is the mark. If the command fails, its error
// is returned and the mark is not raised. Bad input (empty fenceKey or holder,
// token 0 or above engine.MaxToken, no command, a key the guard keeps in
// keys) is reported with an error wrapping ErrInvalidArgument without a round
// trip.
func (r *Redis) Exec(ctx context.Context, fenceKey string, token uint64, holder string, keys []string, args ...any) (any, error) {
	if err := ValidateWrite(fenceKey, token, holder); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, invalid("no command for %q", fenceKey)
	}
	if err := checkKeys(fenceKey, keys); err != nil {
		return nil, err
	}
	scriptKeys := make([]string, 0, 2+len(keys))
	scriptKeys = append(scriptKeys, fenceKey, writeIDKey(fenceKey, r.writeID()))
	scriptKeys = append(scriptKeys, keys...)
	argv := make([]any, 0, 3+len(args))
	argv = append(argv, strconv.FormatUint(token, 10), holder, resendWindowMS)
	argv = append(argv, args...)

	res, err := fenceScript.Run(ctx, r.c, scriptKeys, argv...).Result()
	if err != nil {
		return nil, fmt.Errorf("fence: write for %q: %w", fenceKey, err)
	}
	pair, ok := res.([]any)
	if ok && len(pair) == 1 && pair[0] == int64(2) {
		return nil, nil // a resent copy of a write applied once already
	}
	if !ok || len(pair) != 2 {
		return nil, fmt.Errorf("fence: write for %q: unexpected script reply %#v", fenceKey, res)
	}
	switch pair[0] {
	case int64(1):
		return pair[1], nil
	case int64(0):
		s, _ := pair[1].(string)
		highest, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fence: write for %q: bad high-water mark %#v", fenceKey, pair[1])
		}
		return nil, &StaleError{Resource: fenceKey, Token: token, Highest: highest, Holder: holder}
	}
	return nil, fmt.Errorf("fence: write for %q: unexpected script reply %#v", fenceKey, res)
}

// Set sets key to value iff token is not stale for the resource key, like
// Exec(ctx, FenceKeyFor(key), token, holder, []string{key}, "SET", key, value).
// The high-water mark is stored at FenceKeyFor(key), which is in the same
// Cluster hash slot as key. On a stale token it returns a *StaleError whose
// Resource is FenceKeyFor(key) and leaves key unchanged. A key the guard
// keeps (a fence key, a write id key: see Exec) is refused with an error
// wrapping ErrInvalidArgument, unsent.
func (r *Redis) Set(ctx context.Context, key string, value string, token uint64, holder string) error {
	if key == "" {
		return invalid("empty key")
	}
	_, err := r.Exec(ctx, FenceKeyFor(key), token, holder, []string{key}, "SET", key, value)
	return err
}

// Highest returns the high-water mark stored at fenceKey: the highest token
// accepted for it, or 0 if none was.
func (r *Redis) Highest(ctx context.Context, fenceKey string) (uint64, error) {
	if fenceKey == "" {
		return 0, invalid("empty fence key")
	}
	s, err := r.c.HGet(ctx, fenceKey, "token").Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fence: read high-water mark %q: %w", fenceKey, err)
	}
	highest, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fence: read high-water mark %q: %w", fenceKey, err)
	}
	return highest, nil
}
