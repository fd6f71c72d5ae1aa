package events

import "github.com/prometheus/client_golang/prometheus"

// Collector exposes the relay's counters to Prometheus:
// plinth_outbox_pending, plinth_outbox_published_total, plinth_outbox_publish_failures_total
// and plinth_outbox_dead_letters_total, labelled with the relay's ce-source.
func (r *Relay) Collector() prometheus.Collector {
	labels := prometheus.Labels{"source": r.cfg.Source}
	return &relayCollector{
		relay: r,
		pending: prometheus.NewDesc("plinth_outbox_pending",
			"Outbox events not yet acknowledged by JetStream.", nil, labels),
		published: prometheus.NewDesc("plinth_outbox_published_total",
			"Outbox events published and acknowledged by JetStream.", nil, labels),
		failures: prometheus.NewDesc("plinth_outbox_publish_failures_total",
			"Failed outbox publish attempts (each is retried with backoff).", nil, labels),
		parked: prometheus.NewDesc("plinth_outbox_dead_letters_total",
			"Outbox events no retry could deliver (too large, malformed), parked in outbox_dead_letters.", nil, labels),
	}
}

type relayCollector struct {
	relay                                *Relay
	pending, published, failures, parked *prometheus.Desc
}

func (c *relayCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.published
	ch <- c.failures
	ch <- c.parked
}

func (c *relayCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.relay.Stats()
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(c.published, prometheus.CounterValue, float64(s.Published))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(s.Failures))
	ch <- prometheus.MustNewConstMetric(c.parked, prometheus.CounterValue, float64(s.Parked))
}
