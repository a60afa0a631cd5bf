package lab

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/safety/check"
)

// TestJudgeCannotJudge: a history the checks could not decide (no final
// state, porcupine out of time) fails its run, whatever else it shows.
func TestJudgeCannotJudge(t *testing.T) {
	spec := RunSpec{Scenario: ScenarioByID(3), Mode: Single}
	r := check.Result{Grants: check.Counts{OK: 1}, Linearizable: "ok"}
	if p := judge(spec, r); len(p) != 0 {
		t.Fatalf("clean result: %q", p)
	}
	r.Unjudged = []string{"I5: porcupine gave no answer within 20s"}
	for _, c := range []Control{NoControl, FenceOff, NoFencing} {
		spec.Control = c
		p := judge(spec, r)
		if len(p) == 0 || !strings.HasPrefix(p[0], "cannot judge: I5") {
			t.Errorf("control %q: problems %q", c, p)
		}
	}
}

// TestControlsMustShow: each of controls.go's controls fails its run
// unless its check reports the violation.
func TestControlsMustShow(t *testing.T) {
	for _, spec := range controlRuns(1) {
		r := check.Result{Grants: check.Counts{OK: 1}, Linearizable: "ok"}
		if p := judge(spec, r); len(p) != 1 || !strings.Contains(p[0], "negative control "+string(spec.Control)) {
			t.Errorf("%s without its violation: %q", spec.Key(), p)
		}
		if spec.Control.Expect() == "" {
			t.Errorf("%s: nothing expected", spec.Key())
		}
	}
}
