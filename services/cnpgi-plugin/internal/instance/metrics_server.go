package instance

import (
	"context"
	"errors"
	"log/slog"
	"time"

	metricsv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/metrics/v1"
	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/catalog/history"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/cluster"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/errmap"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/instance/metrics"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/wal"
)

// ArchiveSummaries summarises a server's archive for Collect; *history.Reader provides it.
type ArchiveSummaries interface {
	Summary(ctx context.Context, store, server string) (history.Summary, error)
}

// MetricsServer implements cnpgi.metrics.v1.Metrics for the instance manager's exporter.
type MetricsServer struct {
	metricsv1.UnimplementedMetricsServer
	plugin   string
	stores   *stores.Registry
	history  ArchiveSummaries
	failures *metrics.Failures
	now      func() time.Time
	log      *slog.Logger
}

// NewMetricsServer reports the clusters that use plugin, from history and failures.
func NewMetricsServer(plugin string, stores *stores.Registry, history ArchiveSummaries, failures *metrics.Failures, log *slog.Logger) *MetricsServer {
	return &MetricsServer{plugin: plugin, stores: stores, history: history, failures: failures, now: time.Now, log: log}
}

// GetCapabilities lists the metrics RPCs.
func (s *MetricsServer) GetCapabilities(context.Context, *metricsv1.MetricsCapabilitiesRequest) (*metricsv1.MetricsCapabilitiesResult, error) {
	return &metricsv1.MetricsCapabilitiesResult{Capabilities: []*metricsv1.MetricsCapability{{
		Type: &metricsv1.MetricsCapability_Rpc{Rpc: &metricsv1.MetricsCapability_RPC{Type: metricsv1.MetricsCapability_RPC_TYPE_METRICS}},
	}}}, nil
}

// Define describes every metric, each with its value_type: the instance manager dereferences
// it without a nil check.
func (s *MetricsServer) Define(ctx context.Context, req *metricsv1.DefineMetricsRequest) (*metricsv1.DefineMetricsResult, error) {
	if _, err := cluster.ParseField(req.GetClusterDefinition(), "cluster_definition"); err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	resp := &metricsv1.DefineMetricsResult{}
	for _, d := range metrics.Definitions() {
		resp.Metrics = append(resp.Metrics, &metricsv1.Metric{
			FqName: d.Name, Help: d.Help, VariableLabels: d.Labels,
			ValueType: &metricsv1.MetricType{Type: metricsv1.MetricType_Type(d.Type)},
		})
	}
	return resp, nil
}

// Collect reports the cluster's archive; a cluster that does not use the plugin has no
// samples.
func (s *MetricsServer) Collect(ctx context.Context, req *metricsv1.CollectMetricsRequest) (*metricsv1.CollectMetricsResult, error) {
	c, err := cluster.ParseField(req.GetClusterDefinition(), "cluster_definition")
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	t, err := c.ArchiveTarget(s.plugin)
	if errors.Is(err, cluster.ErrPluginNotUsed) {
		return &metricsv1.CollectMetricsResult{}, nil
	}
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	wt, err := wal.Resolve(ctx, s.stores, t)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	store, server := wt.Store.Name, wt.Server
	sum, err := s.history.Summary(ctx, store, server)
	if err != nil {
		return nil, errmap.ToStatus(ctx, s.log, err)
	}
	resp := &metricsv1.CollectMetricsResult{}
	for _, m := range metrics.Collect(sum, s.failures.Count(store, server), s.now(), store, server) {
		resp.Metrics = append(resp.Metrics, &metricsv1.CollectMetric{FqName: m.Name, Value: m.Value, VariableLabels: m.LabelValues})
	}
	return resp, nil
}

// CountArchiveFailures is a unary interceptor that counts failed WAL.Archive calls per store
// and server, for Collect: archive_command failures are what an operator of the cluster
// needs to alert on, and they happen in this process.
func CountArchiveFailures(plugin string, stores *stores.Registry, failures *metrics.Failures) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil || info.FullMethod != walv1.WAL_Archive_FullMethodName {
			return resp, err
		}
		ar, _ := req.(*walv1.WALArchiveRequest)
		c, perr := cluster.Parse(ar.GetClusterDefinition())
		if perr != nil {
			return resp, err
		}
		if t, terr := c.ArchiveTarget(plugin); terr == nil {
			if wt, serr := wal.Resolve(ctx, stores, t); serr == nil {
				failures.Add(wt.Store.Name, wt.Server, time.Now(), status.Convert(err).Message())
			}
		}
		return resp, err
	}
}
