package etcd

import (
	"strings"
	"testing"
)

// TestKeys: no name's keys fall under another name's prefix, escaping
// keeps name prefixes as key prefixes, and parse inverts the layout.
func TestKeys(t *testing.T) {
	k := keyspace{root: DefaultPrefix}
	names := []string{"a", "a/b", "a%2Fb", "a%", "ab", "/", "%", "a/", "é/ü"}
	for _, x := range names {
		for _, y := range names {
			if x != y && strings.HasPrefix(k.lock(y), k.name(x)) {
				t.Errorf("the lock key of %q is under the prefix of %q", y, x)
			}
			if strings.HasPrefix(y, x) != strings.HasPrefix(k.root+escape(y), k.root+escape(x)) {
				t.Errorf("escaping changed whether %q starts with %q", y, x)
			}
		}
		for _, key := range []string{k.lock(x), k.res(x), k.wake(x), k.waiter(x, "w/1")} {
			name, rest, ok := k.parse(key)
			if !ok || name != x || rest == "" {
				t.Errorf("parse(%q) = %q, %q, %v", key, name, rest, ok)
			}
		}
		if _, rest, _ := k.parse(k.waiter(x, "w/1")); unescape(strings.TrimPrefix(rest, queueSuffix)) != "w/1" {
			t.Errorf("waiter id of %q: %q", x, rest)
		}
	}
	// The fast grant compares the keys from lockSuffix to resSuffix as
	// one range (fastGrantTxn): the lock key, the queue's entries and the
	// reservation, and none of the name's other keys.
	start, end := freeRange("")
	inRange := func(rest string) bool { return rest >= start && rest < end }
	for _, rest := range []string{lockSuffix, queueSuffix + "w", resSuffix} {
		if !inRange(rest) {
			t.Errorf("%q is not in the free lock's range", rest)
		}
	}
	for _, rest := range []string{wakeSuffix, latchSuffix, takenSuffix + "o", configSuffix, holderSuffix + "o", sharedQueueSuffix + "w", sharedWakeSuffix} {
		if inRange(rest) {
			t.Errorf("%q is in the free lock's range", rest)
		}
	}
	if got := rangeEnd("ab"); got != "ac" {
		t.Errorf("rangeEnd(ab) = %q", got)
	}
}
