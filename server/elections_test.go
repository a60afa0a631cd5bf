package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/server/api"
)

func electionURL(s *testServer, name, action string) string {
	u := s.url + "/v1/elections/" + url.PathEscape(name)
	if action != "" {
		u += "/" + action
	}
	return u
}

// TestElectionEndpoints: campaign, leader, proclaim, resign over HTTP; a
// second campaigner held open is elected when the first resigns; a wrong
// term or owner, an empty or oversized value are refused and change
// nothing; the watch stream follows every change; the dashboard lists the
// election.
func TestElectionEndpoints(t *testing.T) {
	s := start(t, nil)
	want(t, "no leader yet", call(t, "GET", electionURL(s, "e", ""), "", nil), 404, api.CodeNoLeader)
	watch := watchLeader(t, s, "e")
	if st := watch(); st.Elected {
		t.Fatalf("first watch event: %+v, want no leader", st)
	}
	a := call(t, "POST", electionURL(s, "e", "campaign"), "", map[string]any{"value": "a", "ttl_ms": 10000})
	want(t, "campaign a", a, 200, "")
	ownerA, termA := a.json(t)["owner"].(string), num(t, a, "token")
	if st := watch(); st.Value != "a" || st.Term != termA {
		t.Fatalf("watch after a's campaign: %+v, want a in term %d", st, termA)
	}
	got := make(chan reply, 1)
	go func() {
		got <- call(t, "POST", electionURL(s, "e", "campaign"), "", map[string]any{"value": "b", "wait_ms": 10000})
	}()
	waitFor(t, patience, "b to wait", func() bool { return waiters(t, s.eng, "e") > 0 })

	for _, bad := range []struct {
		what, action string
		body         any
		status       int
		code         string
	}{
		{"empty value", "campaign", map[string]any{"value": ""}, 400, api.CodeInvalidArgument},
		{"oversized value", "proclaim", map[string]any{"owner": ownerA, "term": termA, "value": strings.Repeat("v", 5000)}, 400, api.CodeInvalidArgument},
		{"wrong term", "proclaim", map[string]any{"owner": ownerA, "term": termA + 1, "value": "x"}, 409, api.CodeNotHeld},
		{"wrong owner", "proclaim", map[string]any{"owner": "intruder", "term": termA, "value": "x"}, 409, api.CodeNotHeld},
		{"no term", "resign", map[string]any{"owner": ownerA}, 400, api.CodeInvalidArgument},
		{"wrong term resign", "resign", map[string]any{"owner": ownerA, "term": termA - 1}, 409, api.CodeNotHeld},
	} {
		want(t, bad.what, call(t, "POST", electionURL(s, "e", bad.action), "", bad.body), bad.status, bad.code)
		l := call(t, "GET", electionURL(s, "e", ""), "", nil)
		if m := l.json(t); m["value"] != "a" || uint64(m["term"].(float64)) != termA {
			t.Fatalf("%s changed the leader: %s", bad.what, l.body)
		}
	}

	want(t, "proclaim", call(t, "POST", electionURL(s, "e", "proclaim"), "", map[string]any{"owner": ownerA, "term": termA, "value": "a2"}), 200, "")
	if st := watch(); st.Value != "a2" || st.Term != termA {
		t.Fatalf("watch after proclaim: %+v", st)
	}
	want(t, "resign", call(t, "POST", electionURL(s, "e", "resign"), "", map[string]any{"owner": ownerA, "term": termA}), 200, "")
	b := <-got
	want(t, "campaign b", b, 200, "")
	termB := num(t, b, "token")
	if termB <= termA {
		t.Fatalf("term %d after %d", termB, termA)
	}
	for {
		st := watch()
		if st.Value == "b" && st.Term == termB {
			break
		}
		if st.Elected && st.Value != "b" {
			t.Fatalf("watch after the hand-over: %+v", st)
		}
	}
	l := call(t, "GET", electionURL(s, "e", ""), "", nil)
	want(t, "leader b", l, 200, "")
	if m := l.json(t); m["value"] != "b" {
		t.Fatalf("leader: %s", l.body)
	}
}

// watchLeader opens the watch stream of name and returns a function that
// reads its next leader event.
func watchLeader(t *testing.T, s *testServer, name string) func() api.LeaderInfo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", electionURL(s, name, "watch"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("watch: HTTP %d", resp.StatusCode)
	}
	rd := bufio.NewReader(resp.Body)
	events := make(chan api.LeaderInfo, 16)
	go func() {
		defer close(events)
		event := ""
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == api.EventLeader:
				var li api.LeaderInfo
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &li) == nil {
					events <- li
				}
			}
		}
	}()
	return func() api.LeaderInfo {
		t.Helper()
		select {
		case li, ok := <-events:
			if !ok {
				t.Fatal("the watch stream ended")
			}
			return li
		case <-time.After(patience):
			t.Fatalf("no leader event within %v", patience)
		}
		return api.LeaderInfo{}
	}
}

// TestCampaignAgain: a second campaign by the leader's own owner re-enters
// (same term, a second hold) and stores its value, as
// distlock.Client.Campaign does: the leader and the watchers see it. An
// open watch is no follower.
func TestCampaignAgain(t *testing.T) {
	s := start(t, nil)
	watch := watchLeader(t, s, "e")
	if st := watch(); st.Elected {
		t.Fatalf("first watch event: %+v, want no leader", st)
	}
	a := call(t, "POST", electionURL(s, "e", "campaign"), "", map[string]any{"owner": "leader-1", "value": "a", "ttl_ms": 10000})
	want(t, "campaign", a, 200, "")
	term := num(t, a, "token")
	if st := watch(); st.Value != "a" || st.Term != term {
		t.Fatalf("watch after the campaign: %+v", st)
	}
	again := call(t, "POST", electionURL(s, "e", "campaign"), "", map[string]any{"owner": "leader-1", "value": "a2", "ttl_ms": 10000})
	want(t, "campaign again", again, 200, "")
	if num(t, again, "token") != term || num(t, again, "count") != 2 {
		t.Fatalf("campaign again: %s, want term %d and count 2", again.body, term)
	}
	l := call(t, "GET", electionURL(s, "e", ""), "", nil)
	if m := l.json(t); m["value"] != "a2" || uint64(m["term"].(float64)) != term || m["followers"].(float64) != 0 {
		t.Fatalf("leader after the second campaign: %s, want a2 in term %d and no follower", l.body, term)
	}
	if st := watch(); st.Value != "a2" || st.Term != term {
		t.Fatalf("watch after the second campaign: %+v, want a2", st)
	}
}
