package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {0.1, 1}} {
		if got := percentile(s, c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil) = %v", got)
	}
	if got := mean([]time.Duration{1, 2, 3}); got != 2 {
		t.Errorf("mean = %v", got)
	}
}

func TestJain(t *testing.T) {
	if got := jain([]int{5, 5, 5, 5}); got != 1 {
		t.Errorf("equal shares: %v", got)
	}
	if got := jain([]int{8, 0, 0, 0}); got != 0.25 {
		t.Errorf("one takes all: %v", got)
	}
	if got := jain([]int{0, 0}); got != 0 {
		t.Errorf("no grants: %v", got)
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{3, 1, 2, math.NaN()})
	if s.med != 2 || s.min != 1 || s.max != 3 || s.n != 3 {
		t.Errorf("summarize = %+v", s)
	}
	if s := summarize([]float64{1, 4}); s.med != 2.5 {
		t.Errorf("even median = %v", s.med)
	}
	if s := summarize(nil); !math.IsNaN(s.med) {
		t.Errorf("empty: %+v", s)
	}
}
