package etcd

import "strconv"

// encode returns h as JSON, exactly as json.Marshal writes it, without
// reflection when every string is plain (printable ASCII that JSON writes
// as it is): a grant's value is built on every acquisition.
func (h hold) encode() string {
	if len(h.Rels) > 0 || !plain(h.Owner) || !plain(h.Attempt) || !plain(h.Metadata) || !plain(h.Rel) {
		return mustJSON(h)
	}
	b := make([]byte, 0, 48+len(h.Owner)+len(h.Attempt)+len(h.Metadata)+len(h.Rel))
	b = append(b, `{"o":"`...)
	b = append(b, h.Owner...)
	b = append(b, `","c":`...)
	b = strconv.AppendInt(b, int64(h.Count), 10)
	b = appendField(b, `,"a":"`, h.Attempt)
	b = appendField(b, `,"m":"`, h.Metadata)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, h.TTL, 10)
	b = appendField(b, `,"r":"`, h.Rel)
	b = append(b, '}')
	return string(b)
}

// appendField appends an omitempty string field (key is `,"k":"`).
func appendField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, key...)
	b = append(b, v...)
	return append(b, '"')
}

// plain reports whether json.Marshal writes s between its quotes as it is:
// printable ASCII but for the quote, the backslash and the characters it
// escapes for HTML (<, >, &).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
