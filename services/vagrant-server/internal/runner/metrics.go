package runner

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the runner's Prometheus metrics, shared by the ids a process registers.
type Metrics struct {
	registered   *prometheus.GaugeVec
	running      prometheus.Gauge
	jobs         *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	streamErrors *prometheus.CounterVec
}

// NewMetrics creates the runner's metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		registered: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plinth_vagrant_runner_registered",
			Help: "1 while the runner id is registered with vagrant-server (RunnerConfig stream open), else 0; one series per id the process registers."},
			[]string{"runner_id"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: "plinth_vagrant_runner_jobs_running",
			Help: "Jobs executing now, over every id and slot of the process."}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plinth_vagrant_runner_jobs_total",
			Help: "Jobs executed, by operation and outcome (success, error, canceled, aborted, lost)."}, []string{"operation", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plinth_vagrant_runner_job_duration_seconds",
			Help: "Time from acknowledging a job to reporting its end.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)},
			[]string{"operation"}),
		streamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plinth_vagrant_runner_stream_errors_total",
			Help: "Failed or broken streams to vagrant-server, by stream (config, job); each is retried with backoff."}, []string{"stream"}),
	}
	for _, c := range []prometheus.Collector{m.registered, m.running, m.jobs, m.duration, m.streamErrors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
