package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// metrics are the agent's own series, beside the gRPC and process ones every service has.
type metrics struct {
	lvmSeconds *prometheus.HistogramVec
	size, free *prometheus.GaugeVec
	volumes    *prometheus.GaugeVec
	jobs       *prometheus.CounterVec
	jobBytes   *prometheus.CounterVec
	jobSeconds *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	class := []string{"device_class", "volume_group"}
	m := &metrics{
		lvmSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plinth_lvmd_lvm_command_duration_seconds",
			Help:    "Duration of lvm commands by subcommand and outcome (ok, no_space, lv_not_found, timeout, ...).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}}, []string{"command", "outcome"}),
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plinth_lvmd_device_class_size_bytes",
			Help: "Size of each device class's volume group."}, class),
		free: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plinth_lvmd_device_class_free_bytes",
			Help: "Free space of each device class after its spare (what GetFreeBytes reports)."}, class),
		volumes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "plinth_lvmd_device_class_volumes",
			Help: "Logical volumes in each device class."}, class),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plinth_lvmd_jobs_total",
			Help: "Finished backup and restore jobs by kind and state."}, []string{"kind", "state"}),
		jobBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plinth_lvmd_job_bytes_total",
			Help: "Volume bytes copied by backup and restore jobs."}, []string{"kind"}),
		jobSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "plinth_lvmd_job_duration_seconds",
			Help: "Duration of backup and restore jobs.", Buckets: prometheus.ExponentialBuckets(1, 2, 14)}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.lvmSeconds, m.size, m.free, m.volumes, m.jobs, m.jobBytes, m.jobSeconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeLVM(command, outcome string, d time.Duration) {
	m.lvmSeconds.WithLabelValues(command, outcome).Observe(d.Seconds())
}

func (m *metrics) observeClass(c volume.Capacity) {
	m.size.WithLabelValues(c.DeviceClass, c.VolumeGroup).Set(float64(c.Size))
	m.free.WithLabelValues(c.DeviceClass, c.VolumeGroup).Set(float64(c.Free))
	m.volumes.WithLabelValues(c.DeviceClass, c.VolumeGroup).Set(float64(c.Volumes))
}

func (m *metrics) observeJob(kind backup.Kind, state backup.State, bytes uint64, d time.Duration) {
	m.jobs.WithLabelValues(string(kind), string(state)).Inc()
	m.jobBytes.WithLabelValues(string(kind)).Add(float64(bytes))
	m.jobSeconds.WithLabelValues(string(kind)).Observe(d.Seconds())
}
