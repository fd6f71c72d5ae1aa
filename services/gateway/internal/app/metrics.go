package app

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plinth-dev/plinth/services/gateway/internal/front"
)

// registerConnMetrics exports the port's connection counts: what it holds now, and what its
// caps refused (a client at PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT, the port at
// PLINTH_GATEWAY_MAX_CONNS). Refusals are counted, never logged: a flood would flood the log.
func registerConnMetrics(reg prometheus.Registerer, conns *front.Conns) error {
	refused := func(perClient bool) func() float64 {
		return func() float64 {
			c, t := conns.Refused()
			if perClient {
				return float64(c)
			}
			return float64(t)
		}
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "plinth_gateway_connections",
			Help: "Connections the gateway's port holds now."},
			func() float64 { return float64(conns.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "plinth_gateway_connections_refused_total",
			Help:        "Connections closed at accept by a cap: per_client (PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT), total (PLINTH_GATEWAY_MAX_CONNS).",
			ConstLabels: prometheus.Labels{"limit": "per_client"}}, refused(true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "plinth_gateway_connections_refused_total",
			Help:        "Connections closed at accept by a cap: per_client (PLINTH_GATEWAY_MAX_CONNS_PER_CLIENT), total (PLINTH_GATEWAY_MAX_CONNS).",
			ConstLabels: prometheus.Labels{"limit": "total"}}, refused(false)),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register gateway connection metrics: %w", err)
		}
	}
	return nil
}
