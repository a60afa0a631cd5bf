package distlockotel

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names: OpenTelemetry's dotted names whose Prometheus translation
// (counters get _total, seconds get _seconds) is the server's series
// (server.Metrics).
const (
	MetricAcquisitions = "distlock.acquisitions"      // counter: distlock_acquisitions_total
	MetricContended    = "distlock.acquire.contended" // counter: distlock_acquire_contended_total
	MetricFailures     = "distlock.acquire.failures"  // counter {reason}: distlock_acquire_failures_total
	MetricWait         = "distlock.acquire.wait"      // histogram, s {outcome}: distlock_acquire_wait_seconds
	MetricHold         = "distlock.hold"              // histogram, s {end}: distlock_hold_seconds
	MetricRenewals     = "distlock.renewals"          // counter {result}: distlock_renewals_total
	MetricLost         = "distlock.leases.lost"       // counter {cause}: distlock_leases_lost_total
	MetricHolders      = "distlock.holders"           // up-down counter: distlock_holders
	MetricWaiters      = "distlock.waiters"           // up-down counter: distlock_waiters (the queue length)
)

// Bucket boundaries, as the server's: a hand-off on loopback (100µs) to a
// long wait (5m); a short critical section (1ms) to a long job (1h).
var (
	waitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	holdBuckets = []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}
)

// The attribute sets recorded most often, made once.
var (
	outcomeAcquired = attribute.NewSet(attribute.String(LabelOutcome, "acquired"))
	outcomeFailed   = attribute.NewSet(attribute.String(LabelOutcome, "failed"))
	endReleased     = attribute.NewSet(attribute.String(LabelEnd, "released"))
	endLost         = attribute.NewSet(attribute.String(LabelEnd, "lost"))
	renewalOK       = attribute.NewSet(attribute.String(LabelResult, "ok"))
	renewalFailed   = attribute.NewSet(attribute.String(LabelResult, "failed"))
)

// instruments are the Observer's metrics.
type instruments struct {
	acquired, contended, failures, renewals, lost metric.Int64Counter
	wait, hold                                    metric.Float64Histogram
	holders, waiters                              metric.Int64UpDownCounter
}

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.acquired = counter(MetricAcquisitions, "{acquisition}", "Locks granted.")
	in.contended = counter(MetricContended, "{acquire}", "Acquires that found the lock held by another owner.")
	in.failures = counter(MetricFailures, "{acquire}", "Acquires that gave up, by reason.")
	in.renewals = counter(MetricRenewals, "{renewal}", "Lease renewals, by result.")
	in.lost = counter(MetricLost, "{lease}", "Leases lost, by cause.")
	var err error
	in.wait, err = m.Float64Histogram(MetricWait, metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its grant or give-up."), metric.WithExplicitBucketBoundaries(waitBuckets...))
	errs = append(errs, err)
	in.hold, err = m.Float64Histogram(MetricHold, metric.WithUnit("s"),
		metric.WithDescription("Time a lease was held, until released or lost."), metric.WithExplicitBucketBoundaries(holdBuckets...))
	errs = append(errs, err)
	in.holders, err = m.Int64UpDownCounter(MetricHolders, metric.WithUnit("{lease}"), metric.WithDescription("Leases held now."))
	errs = append(errs, err)
	in.waiters, err = m.Int64UpDownCounter(MetricWaiters, metric.WithUnit("{acquire}"), metric.WithDescription("Acquires waiting now."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &in, nil
}
