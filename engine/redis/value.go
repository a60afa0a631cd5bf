package redis

import (
	"encoding/json"
	"strconv"
	"strings"
)

// lockValue is the value of a lock key as the scripts write it
// (scripts/lock.lua). The common grant, one hold of a one-off owner with no
// metadata, is the short form "<token> <owner>" ('*' instead of the space
// once a waiter marked the lock); anything else is a JSON object with these
// fields. A token starts with a digit and JSON with '{'.
type lockValue struct {
	Owner    string   `json:"o"`
	Count    int      `json:"c"`
	Token    string   `json:"t"`
	Metadata string   `json:"m,omitempty"`
	Attempt  string   `json:"a,omitempty"`
	Release  string   `json:"r,omitempty"`  // one release id, as older versions wrote it
	Releases []string `json:"rs,omitempty"` // the last releases' ids (scripts/releaseids.lua)
	Waiters  bool     `json:"w,omitempty"`
}

// parseLockValue decodes a lock key's value; ok is false when v is not a
// distlock lock.
func parseLockValue(v string) (lv lockValue, ok bool) {
	if strings.HasPrefix(v, "{") {
		if err := json.Unmarshal([]byte(v), &lv); err != nil || lv.Owner == "" || lv.Count < 1 || !isToken(lv.Token) {
			return lockValue{}, false
		}
		return lv, true
	}
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i < 1 || (v[i] != ' ' && v[i] != '*') || i+1 == len(v) {
		return lockValue{}, false
	}
	return lockValue{Owner: v[i+1:], Count: 1, Token: v[:i], Waiters: v[i] == '*'}, true
}

// isToken reports whether s is a fencing token as the scripts write it.
func isToken(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// token returns the value's fencing token as a number.
func (lv lockValue) token() uint64 {
	t, _ := strconv.ParseUint(lv.Token, 10, 64)
	return t
}
