package cluster

import "github.com/prometheus/client_golang/prometheus"

var (
	sourceUpDesc = prometheus.NewDesc("plinth_stats_source_up",
		"1 when the source's latest refresh succeeded, 0 when it failed (its last report is served).", []string{"source"}, nil)
	sourceSuccessDesc = prometheus.NewDesc("plinth_stats_source_last_success_timestamp_seconds",
		"When the source last answered (Unix time); 0 before its first answer.", []string{"source"}, nil)
	sourceFailuresDesc = prometheus.NewDesc("plinth_stats_source_failures_total",
		"Failed refreshes of the source.", []string{"source"}, nil)
	radarDesc = prometheus.NewDesc("plinth_stats_radar",
		"The cluster radar's indicators (0-100) as GetClusterRadar answers them.", []string{"indicator"}, nil)
	growthDesc = prometheus.NewDesc("plinth_stats_usage_growth_bytes_per_second",
		"How fast used capacity grew over the stability window (from the usage history).", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sourceUpDesc, sourceSuccessDesc, sourceFailuresDesc, radarDesc, growthDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the figures are read from the collector's state at
// scrape time, so they never disagree with the API.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	sources := c.sourcesLocked()
	failures := make([]float64, len(sources))
	for i, s := range sources {
		failures[i] = float64(c.total[s.Name])
	}
	c.mu.Unlock()
	for i, s := range sources {
		up, at := 0.0, 0.0
		if s.Err == nil && !s.At.IsZero() {
			up = 1
		}
		if !s.At.IsZero() {
			at = float64(s.At.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, up, s.Name)
		ch <- prometheus.MustNewConstMetric(sourceSuccessDesc, prometheus.GaugeValue, at, s.Name)
		ch <- prometheus.MustNewConstMetric(sourceFailuresDesc, prometheus.CounterValue, failures[i], s.Name)
	}
	if v := c.view.Load(); v != nil {
		for name, value := range map[string]float64{
			"cluster_health": v.Radar.ClusterHealth, "nodes_health": v.Radar.NodesHealth,
			"capacity_available": v.Radar.CapacityAvailable, "stability": v.Radar.Stability,
			"reliability": v.Radar.Reliability,
		} {
			ch <- prometheus.MustNewConstMetric(radarDesc, prometheus.GaugeValue, value, name)
		}
	}
	if c.cfg.History != nil {
		if g, ok := c.cfg.History.Growth(); ok {
			ch <- prometheus.MustNewConstMetric(growthDesc, prometheus.GaugeValue, g)
		}
	}
}
