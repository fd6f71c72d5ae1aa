package netlimit

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Collectors export conns' and calls' counts under namespace (e.g. "plinth_gateway"):
// <namespace>_connections, what port holds now; <namespace>_connections_refused_total,
// labelled limit="per_client" (and limit="total" when conns has a total cap), the
// connections closed at accept; <namespace>_calls_refused_total, the calls refused.
func Collectors(namespace, port string, conns *Conns, calls *Calls) []prometheus.Collector {
	l := conns.limits
	why := []string{fmt.Sprintf("per_client (%s)", l.PerClientSetting)}
	if l.Total > 0 || l.TotalSetting != "" {
		why = append(why, fmt.Sprintf("total (%s)", l.TotalSetting))
	}
	refusedHelp := "Connections closed at accept by a cap: " + strings.Join(why, ", ") + "."
	refused := func(label string, n func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: namespace + "_connections_refused_total",
			Help: refusedHelp, ConstLabels: prometheus.Labels{"limit": label}},
			func() float64 { return float64(n()) })
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: namespace + "_connections",
			Help: fmt.Sprintf("Connections %s holds now.", port)},
			func() float64 { return float64(conns.Open()) }),
		refused("per_client", func() int64 { n, _ := conns.Refused(); return n }),
	}
	if len(why) > 1 {
		cs = append(cs, refused("total", func() int64 { _, n := conns.Refused(); return n }))
	}
	return append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: namespace + "_calls_refused_total",
		Help: fmt.Sprintf("Calls refused with ResourceExhausted because their client address had %s calls in progress.", calls.limits.Setting)},
		func() float64 { return float64(calls.Refused()) }))
}

// Register registers Collectors on reg.
func Register(reg prometheus.Registerer, namespace, port string, conns *Conns, calls *Calls) error {
	for _, c := range Collectors(namespace, port, conns, calls) {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register %s connection metrics: %w", namespace, err)
		}
	}
	return nil
}
