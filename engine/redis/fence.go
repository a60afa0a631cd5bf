package redis

import (
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
)

// raiseError turns a raise script's refusal ('DISTLOCK below <token>',
// 'DISTLOCK ahead <limit>') into the error engine.CheckRaise gives; other
// errors are returned as they are.
func raiseError(err error, token uint64) error {
	var re goredis.Error
	if errors.As(err, &re) {
		if refusal := engine.RaiseRefusal(re.Error(), token); refusal != nil {
			return refusal
		}
	}
	return err
}

// exhausted turns the error INCR gives on a high-water key that no longer
// fits a 64-bit integer (a value written before raises were bounded, or by
// hand) into engine.ErrFenceExhausted: Redis refuses to wrap, and so does
// the grant. Other errors are returned as they are.
func exhausted(err error) error {
	var re goredis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		if strings.Contains(msg, "increment or decrement would overflow") || strings.Contains(msg, "value is not an integer or out of range") {
			return fmt.Errorf("%w: %v", engine.ErrFenceExhausted, err)
		}
	}
	return err
}
