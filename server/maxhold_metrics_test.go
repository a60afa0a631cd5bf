package server_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/server"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsMaxHoldCause: as a Client's Observer, the metrics count a
// lease ended by WithMaxHold under its own cause label, max_hold (it was
// "other" before the label was added: seen to fail).
func TestMetricsMaxHoldCause(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := server.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Acquired("x", 0, false)
	m.Lost("x", distlock.MaxHoldExceeded, time.Second)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "distlock_leases_lost_total" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "cause" && l.GetValue() == "max_hold" && s.GetCounter().GetValue() == 1 {
					return
				}
			}
		}
	}
	t.Fatal(`no distlock_leases_lost_total{cause="max_hold"} 1`)
}
