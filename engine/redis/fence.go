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

// exhausted turns a script's refusal of a high-water past engine.MaxToken
// ('DISTLOCK fence exhausted'), and the error INCR gives on one that no
// longer fits a 64-bit integer (a value written before raises were bounded,
// or by hand), into engine.ErrFenceExhausted: the grant is refused rather
// than given a token past 2^53-1 or a wrapped one. Other errors are
// returned as they are.
func exhausted(err error) error {
	var re goredis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		if strings.Contains(msg, "DISTLOCK fence exhausted") || strings.Contains(msg, "increment or decrement would overflow") || strings.Contains(msg, "value is not an integer or out of range") {
			return fmt.Errorf("%w: %v", engine.ErrFenceExhausted, err)
		}
	}
	return err
}
