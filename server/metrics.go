package server

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distlock/distlock"
)

// Metrics is a distlock.Observer that feeds Prometheus collectors: plug it
// into any Client with distlock.WithObserver, and into a Redlock engine
// with quorum.WithNodeErrors(m.NodeError). The server feeds it too, from
// the requests it serves. Its methods are safe for concurrent use and never
// block.
//
// Series (no lock names as labels: names are unbounded):
//
//	distlock_acquisitions_total                  grants
//	distlock_acquire_contended_total             acquires that found the lock held by another owner
//	distlock_acquire_failures_total{reason}      why an acquire gave up (see failureReason):
//	                                             locked, timeout, canceled, refused, backend, closed, other
//	distlock_acquire_wait_seconds{outcome}       time from the call to the grant (acquired) or give-up (failed)
//	distlock_hold_seconds{end}                   time held, until released, lost, forced (server: force-released by an admin)
//	                                             or expired (server: ttl ran out unseen)
//	distlock_renewals_total{result}              ok, failed
//	distlock_leases_lost_total{cause}            expired, taken_over, unreachable, max_hold
//	distlock_node_errors_total{node}             failed calls to one node of a Redlock quorum
//	distlock_holders                             holds live now (server: granted through it, not yet ended)
//	distlock_waiters                             waits in progress (server: held-open acquires and
//	                                             release-event streams: GET /v1/locks/{name}/events)
//	distlock_requests_dropped_total              (server) requests not carried out because their client
//	                                             had gone before the server read them (server/clientgone.go)
type Metrics struct {
	acquired   prometheus.Counter
	contended  prometheus.Counter
	failures   *prometheus.CounterVec
	wait       *prometheus.HistogramVec
	hold       *prometheus.HistogramVec
	renewals   *prometheus.CounterVec
	lost       *prometheus.CounterVec
	nodeErrors *prometheus.CounterVec
	holders    prometheus.Gauge
	waiters    prometheus.Gauge
	dropped    prometheus.Counter
	gatherer   prometheus.Gatherer // reg, when it can be gathered
}

var _ distlock.Observer = (*Metrics)(nil)

// waitBuckets span a lock hand-off on loopback (100µs) to a long wait (5m).
var waitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// holdBuckets span a short critical section (1ms) to a long job (1h).
var holdBuckets = []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		acquired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "distlock_acquisitions_total", Help: "Locks granted."}),
		contended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "distlock_acquire_contended_total", Help: "Acquires that found the lock held by another owner."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distlock_acquire_failures_total", Help: "Acquires that gave up, by reason."}, []string{"reason"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "distlock_acquire_wait_seconds", Help: "Time from an acquire call to its grant or give-up.", Buckets: waitBuckets},
			[]string{"outcome"}),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "distlock_hold_seconds", Help: "Time a lease was held, by how its hold ended: released, lost, forced (server: force-released by an admin) or expired (server: its ttl ran out unseen).", Buckets: holdBuckets},
			[]string{"end"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distlock_renewals_total", Help: "Lease renewals, by result."}, []string{"result"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distlock_leases_lost_total", Help: "Leases lost, by cause."}, []string{"cause"}),
		nodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distlock_node_errors_total", Help: "Failed calls to one node of a Redlock quorum."}, []string{"node"}),
		holders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "distlock_holders", Help: "Holds live now: a Client's leases; on a server, the holds granted through it and not yet ended."}),
		waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "distlock_waiters", Help: "Waits in progress: a Client's waiting acquires; on a server, held-open acquires and open release-event streams (GET /v1/locks/{name}/events: what a remote Client's waits, election observers and latch waits listen to)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "distlock_requests_dropped_total", Help: "Requests not carried out because their client had gone before the server read them."}),
	}
	for _, c := range []prometheus.Collector{m.acquired, m.contended, m.failures, m.wait, m.hold,
		m.renewals, m.lost, m.nodeErrors, m.holders, m.waiters, m.dropped} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.gatherer, _ = reg.(prometheus.Gatherer)
	// Show the label values before their first event.
	for _, r := range []string{"locked", "timeout", "canceled", "refused", "backend", "closed", "other"} {
		m.failures.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed"} {
		m.renewals.WithLabelValues(r)
	}
	for _, c := range []distlock.LossCause{distlock.Expired, distlock.TakenOver, distlock.Unreachable, distlock.MaxHoldExceeded} {
		m.lost.WithLabelValues(causeLabel(c))
	}
	return m, nil
}

// Acquired implements distlock.Observer.
func (m *Metrics) Acquired(_ string, waited time.Duration, contended bool) {
	m.acquired.Inc()
	if contended {
		m.contended.Inc()
	}
	m.wait.WithLabelValues("acquired").Observe(waited.Seconds())
	m.holders.Inc()
}

// AcquireFailed implements distlock.Observer.
func (m *Metrics) AcquireFailed(_ string, waited time.Duration, err error) {
	reason := failureReason(err)
	m.failures.WithLabelValues(reason).Inc()
	if errors.Is(err, distlock.ErrLocked) {
		m.contended.Inc()
	}
	m.wait.WithLabelValues("failed").Observe(waited.Seconds())
}

// Waiting implements distlock.Observer.
func (m *Metrics) Waiting(_ string, delta int) { m.waiters.Add(float64(delta)) }

// Renewed implements distlock.Observer.
func (m *Metrics) Renewed(_ string, ok bool) {
	if ok {
		m.renewals.WithLabelValues("ok").Inc()
	} else {
		m.renewals.WithLabelValues("failed").Inc()
	}
}

// Released implements distlock.Observer.
func (m *Metrics) Released(_ string, held time.Duration) {
	m.hold.WithLabelValues("released").Observe(held.Seconds())
	m.holders.Dec()
}

// Lost implements distlock.Observer.
func (m *Metrics) Lost(_ string, cause distlock.LossCause, held time.Duration) {
	m.lostElsewhere(cause)
	m.hold.WithLabelValues("lost").Observe(held.Seconds())
	m.holders.Dec()
}

// NodeError counts a failed call to one node of a Redlock quorum: pass it
// to quorum.WithNodeErrors.
func (m *Metrics) NodeError(node string, _ error) { m.nodeErrors.WithLabelValues(node).Inc() }

// failureReason labels why an acquire gave up (distlock.FailureReason).
func failureReason(err error) string { return distlock.FailureReason(err) }

// causeLabel labels a loss cause (distlock.LossCause.Label).
func causeLabel(c distlock.LossCause) string { return c.Label() }

// fanout is the server's own Observer: the Prometheus metrics, the
// dashboard's chart, and a nudge to the dashboard that something changed.
type fanout struct {
	m       *Metrics
	tl      *timeline
	changed func()
}

func (f *fanout) Acquired(name string, waited time.Duration, contended bool) {
	f.m.Acquired(name, waited, contended)
	f.tl.add(seriesAcquired)
	f.changed()
}

func (f *fanout) AcquireFailed(name string, waited time.Duration, err error) {
	f.m.AcquireFailed(name, waited, err)
}

func (f *fanout) Waiting(name string, delta int) {
	f.m.Waiting(name, delta)
	if delta > 0 {
		f.tl.add(seriesWaits)
	}
	f.changed()
}

func (f *fanout) Renewed(name string, ok bool) { f.m.Renewed(name, ok) }

func (f *fanout) Released(name string, held time.Duration) {
	f.m.Released(name, held)
	f.changed()
}

func (f *fanout) Lost(name string, cause distlock.LossCause, held time.Duration) {
	f.m.Lost(name, cause, held)
	f.lossCharted()
}

// lostElsewhere counts the loss of a lease whose hold this server does
// not track (granted through another server, ended before: forced,
// expired, or an older grant of an owner holding the lock again): in
// distlock_leases_lost_total and in the dashboard's chart, as Lost counts
// a tracked hold's loss in both.
func (f *fanout) lostElsewhere(cause distlock.LossCause) {
	f.m.lostElsewhere(cause)
	f.lossCharted()
}

// lossCharted puts a loss counted in distlock_leases_lost_total on the
// dashboard's chart: the one place both kinds of loss (Lost,
// lostElsewhere) reach it, so that the chart and /metrics agree.
func (f *fanout) lossCharted() {
	f.tl.add(seriesLost)
	f.changed()
}

// forced records a hold that an admin's force-release through this server
// ended.
func (m *Metrics) forced(held time.Duration) {
	m.hold.WithLabelValues("forced").Observe(held.Seconds())
	m.holders.Dec()
}

// expired records a hold that the server stopped seeing: its ttl ran out
// with no renewal or release through this server.
func (m *Metrics) expired(held time.Duration) {
	m.hold.WithLabelValues("expired").Observe(held.Seconds())
	m.holders.Dec()
}

// lostElsewhere counts a lease's loss in distlock_leases_lost_total: Lost's
// count, and the whole of a loss whose hold the server does not track.
func (m *Metrics) lostElsewhere(cause distlock.LossCause) {
	m.lost.WithLabelValues(causeLabel(cause)).Inc()
}
