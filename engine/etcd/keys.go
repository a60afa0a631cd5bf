package etcd

import "strings"

// DefaultPrefix is the key prefix of every lock of an Engine unless
// WithPrefix says otherwise.
const DefaultPrefix = "distlock/"

// Suffixes of a name's keys, under the name's own prefix (see keyspace.name).
const (
	lockSuffix  = "lock" // the holder: value hold, on the grant's lease
	queueSuffix = "q/"   // waiters: q/<waiter id>, value entry, on the waiter's lease
	resSuffix   = "r"    // the reservation for the head: its waiter id, on a short lease
	wakeSuffix  = "w"    // the last wake-up: the head's waiter id, on the head's lease
)

// keyspace maps lock names to etcd keys.
type keyspace struct{ root string }

// escape makes s safe inside one path element: '%' and '/' are escaped, so
// that no name's prefix is the prefix of another name's keys, and escaping
// keeps prefixes (a name prefix escapes to a key prefix).
func escape(s string) string {
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '%':
			b.WriteString("%25")
		case '/':
			b.WriteString("%2F")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// unescape reverses escape.
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	r := strings.NewReplacer("%2F", "/", "%25", "%")
	return r.Replace(s)
}

// name returns the prefix of every key of the lock name.
func (k keyspace) name(name string) string { return k.root + escape(name) + "/" }

func (k keyspace) lock(name string) string  { return k.name(name) + lockSuffix }
func (k keyspace) queue(name string) string { return k.name(name) + queueSuffix }
func (k keyspace) waiter(name, waiter string) string {
	return k.queue(name) + escape(waiter)
}
func (k keyspace) res(name string) string  { return k.name(name) + resSuffix }
func (k keyspace) wake(name string) string { return k.name(name) + wakeSuffix }

// parse splits a key of this keyspace into the lock name and the rest
// ("lock", "q/<waiter>", ...); ok is false for keys of another shape.
func (k keyspace) parse(key string) (name, rest string, ok bool) {
	s, found := strings.CutPrefix(key, k.root)
	if !found {
		return "", "", false
	}
	esc, rest, found := strings.Cut(s, "/")
	if !found {
		return "", "", false
	}
	return unescape(esc), rest, true
}

// freeRange returns the range [start, end) of the keys under a name's
// prefix that a free lock nobody waits for has none of: the lock key, the
// queue's entries and the reservation, and none of the name's other keys
// (TestKeys), so that a fast grant compares one range instead of three.
func freeRange(prefix string) (start, end string) {
	return prefix + lockSuffix, prefix + resSuffix + "\x00"
}

// rangeEnd returns the end of the range of keys that start with prefix.
func rangeEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}
