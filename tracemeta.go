package distlock

import "strings"

// traceMark separates a lock's metadata (WithMetadata) from the trace
// context an EventObserver stamped on its grant: an ASCII record separator
// (valid UTF-8, never typed) and the key "traceparent=".
const traceMark = "\x1etraceparent="

// stampMetadata is the metadata stored with a grant: the caller's, then
// the stamp (a W3C traceparent) after traceMark; the caller's alone when
// the stamp is not a traceparent.
func stampMetadata(metadata, stamp string) string {
	if !validTraceparent(stamp) {
		return metadata
	}
	return metadata + traceMark + stamp
}

// TraceMetadata splits a lock's metadata as engines store it (Inspect's
// Info.Metadata and Holder.Metadata) into the caller's metadata
// (WithMetadata) and the W3C traceparent that an EventObserver stored with
// the grant ("" when there is none): the stored string ends with the
// record separator U+001E, "traceparent=" and the traceparent. Metadata
// without that ending is returned whole.
func TraceMetadata(stored string) (metadata, traceparent string) {
	i := strings.LastIndex(stored, traceMark)
	if i < 0 || !validTraceparent(stored[i+len(traceMark):]) {
		return stored, ""
	}
	return stored[:i], stored[i+len(traceMark):]
}

// JoinTraceMetadata is TraceMetadata's inverse: the metadata stored for
// the caller's metadata and a W3C traceparent (the metadata alone when
// traceparent is not one). A layer that carries the two apart (a
// distlock server's JSON: metadata and traceparent) joins them with it.
func JoinTraceMetadata(metadata, traceparent string) string {
	return stampMetadata(metadata, traceparent)
}

// validTraceparent reports whether s is a version-00 W3C traceparent:
// "00-" 32 hex digits "-" 16 hex digits "-" 2 hex digits.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	for i := 3; i < len(s); i++ {
		if i == 35 || i == 52 {
			continue
		}
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
