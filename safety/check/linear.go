package check

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/distlock/distlock/safety/client"
	"github.com/distlock/distlock/safety/history"
)

// The fenced register: the state of one name's fenced resource is its value
// (a digest) and its high-water mark (token and holder). A fenced read or
// write is accepted iff its token is not stale, and then raises the mark; a
// write also sets the value; an accepted read returns the value. A call
// whose outcome is unknown may or may not have happened (porcupine may put
// it at the end, where it changes nothing).

type regInput struct {
	name   string
	write  bool
	token  uint64
	holder string
	value  string // written value
}

type regOutput struct {
	status string // accepted, rejected, unknown
	value  string // value read
}

type regState struct {
	value  string
	token  uint64
	holder string
}

func (s regState) stale(in regInput) bool {
	return s.token != 0 && (in.token < s.token || (in.token == s.token && in.holder != s.holder))
}

// FencedRegister is the porcupine model of a fenced resource, partitioned
// by lock name.
var FencedRegister = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range ops {
			n := op.Input.(regInput).name
			if _, ok := by[n]; !ok {
				names = append(names, n)
			}
			by[n] = append(by[n], op)
		}
		out := make([][]porcupine.Operation, 0, len(names))
		for _, n := range names {
			out = append(out, by[n])
		}
		return out
	},
	Init: func() any { return regState{value: client.State{}.Digest()} },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		next := regState{value: st.value, token: in.token, holder: in.holder}
		if in.write {
			next.value = in.value
		}
		switch out.status {
		case history.Rejected:
			return st.stale(in), st
		case history.Accepted:
			if st.stale(in) || (!in.write && out.value != st.value) {
				return false, st
			}
			return true, next
		}
		if st.stale(in) {
			return true, st
		}
		return true, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		if in.write {
			return fmt.Sprintf("write(t%d, %s) -> %s", in.token%1000000, in.value, out.status)
		}
		return fmt.Sprintf("read(t%d) -> %s %s", in.token%1000000, out.status, out.value)
	},
	DescribeState: func(state any) string {
		s := state.(regState)
		return fmt.Sprintf("%s mark t%d", s.value, s.token%1000000)
	},
}

// linearizable checks the fenced resource's applies (I5).
func linearizable(h *hist, p Params) (string, string) {
	evs := h.applies[history.Fenced]
	if len(evs) == 0 {
		return "n/a", ""
	}
	ids := map[string]int{}
	next := 0
	var ops []porcupine.Operation
	for _, e := range evs {
		in := regInput{name: e.Name, write: e.Kind == history.KindWrite, token: e.Token, holder: e.Owner, value: e.Value}
		out := regOutput{status: e.Result}
		if !in.write {
			in.value = ""
			out.value = e.Value
		}
		ret := e.Complete
		var id int
		if e.Result == history.Unknown {
			ret = math.MaxInt64 / 2
			id = next // a client of its own: it may still be running
			next++
		} else {
			var ok bool
			if id, ok = ids[e.Client]; !ok {
				id = next
				next++
				ids[e.Client] = id
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: id, Input: in, Call: e.Invoke, Output: out, Return: ret})
	}
	res, info := porcupine.CheckOperationsVerbose(FencedRegister, ops, linearizeTimeout(p))
	v := verdict(res)
	if v == "violation" && p.VisualizePath != "" {
		if err := porcupine.VisualizePath(FencedRegister, info, p.VisualizePath); err == nil {
			return v, p.VisualizePath
		}
	}
	return v, ""
}

// Timeout is I5's verdict when porcupine gave no answer in time: the
// history is not judged (Result.Unjudged), which fails a run.
const Timeout = "timeout"

// verdict maps porcupine's answer to I5's: "ok", "violation" or Timeout
// (porcupine.Unknown: out of time).
func verdict(res porcupine.CheckResult) string {
	switch res {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "violation"
	}
	return Timeout
}

// linearizeTimeout is porcupine's bound (30 s when unset).
func linearizeTimeout(p Params) time.Duration {
	if p.LinearizeTimeout <= 0 {
		return 30 * time.Second
	}
	return p.LinearizeTimeout
}
