package redistest

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Register is an integer in Redis read with GET and written with SET: a
// read-modify-write on it is not atomic, so only a lock keeps concurrent
// increments from being lost. It satisfies enginetest.Register.
type Register struct {
	c   redis.UniversalClient
	key string
}

// NewRegister returns the register stored at key.
func NewRegister(c redis.UniversalClient, key string) *Register { return &Register{c: c, key: key} }

// Get reads the register (0 when unset).
func (r *Register) Get(ctx context.Context) (int64, error) {
	v, err := r.c.Get(ctx, r.key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Set writes the register.
func (r *Register) Set(ctx context.Context, v int64) error {
	return r.c.Set(ctx, r.key, strconv.FormatInt(v, 10), 0).Err()
}
