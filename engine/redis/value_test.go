package redis

import (
	"reflect"
	"testing"
)

// TestParseLockValue: both forms, and values that are not distlock locks.
func TestParseLockValue(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want lockValue
		ok   bool
	}{
		{"1795 f00d", lockValue{Owner: "f00d", Count: 1, Token: "1795"}, true},
		{"1795*f00d", lockValue{Owner: "f00d", Count: 1, Token: "1795", Waiters: true}, true},
		{"12 7 8*9 {x}", lockValue{Owner: "7 8*9 {x}", Count: 1, Token: "12"}, true},
		{`{"o":"job-7","c":2,"t":"99","m":"why \"not\"\n","a":"at","r":"rel","w":true}`,
			lockValue{Owner: "job-7", Count: 2, Token: "99", Metadata: "why \"not\"\n", Attempt: "at", Release: "rel", Waiters: true}, true},
		{`{"o":"job-7","c":1,"t":"99","m":"","a":"at","w":false}`, lockValue{Owner: "job-7", Count: 1, Token: "99", Attempt: "at"}, true},
		{`{"o":"job-7","c":3,"t":"99","rs":["r1","r2"]}`, lockValue{Owner: "job-7", Count: 3, Token: "99", Releases: []string{"r1", "r2"}}, true},
		{"", lockValue{}, false},
		{"1", lockValue{}, false},     // a SETNX "1" lock of other code
		{"12 ", lockValue{}, false},   // no owner
		{" ab", lockValue{}, false},   // no token
		{"12-ab", lockValue{}, false}, // unknown separator
		{"owner", lockValue{}, false},
		{`{"o":"x","c":1,"t":"1"`, lockValue{}, false},    // bad JSON
		{`{"o":"","c":1,"t":"1"}`, lockValue{}, false},    // no owner
		{`{"o":"x","c":0,"t":"1"}`, lockValue{}, false},   // no hold
		{`{"o":"x","c":1,"t":"abc"}`, lockValue{}, false}, // no token
		{`{"foo":"bar"}`, lockValue{}, false},
	} {
		got, ok := parseLockValue(tc.v)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseLockValue(%q) = %+v, %v; want %+v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
