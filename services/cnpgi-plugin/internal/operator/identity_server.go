package operator

import (
	"context"
	"time"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"

	cnpgiplugin "github.com/plinth-dev/plinth/services/cnpgi-plugin/plugin"
)

// Metadata is what GetPluginMetadata reports.
type Metadata struct {
	// Name is the plugin name in domain notation (≤ 63 characters); CloudNativePG keys the
	// plugin by it and dials <socket dir>/<Name>.
	Name, Version string
	// Manifest carries extra key/values (the configured store names).
	Manifest map[string]string
}

// IdentityServer implements cnpgi.identity.v1.Identity.
type IdentityServer struct {
	identityv1.UnimplementedIdentityServer
	meta     Metadata
	services []identityv1.PluginCapability_Service_Type
	ping     func(context.Context) error
}

// NewIdentityServer reports meta and the given services, which must be exactly the ones
// registered on the server: the operator calls GetCapabilities of each one it is told of.
// ping checks the plugin's dependencies for Probe.
func NewIdentityServer(meta Metadata, services []identityv1.PluginCapability_Service_Type, ping func(context.Context) error) *IdentityServer {
	return &IdentityServer{meta: meta, services: services, ping: ping}
}

// GetPluginMetadata describes the plugin.
func (s *IdentityServer) GetPluginMetadata(context.Context, *identityv1.GetPluginMetadataRequest) (*identityv1.GetPluginMetadataResponse, error) {
	return &identityv1.GetPluginMetadataResponse{
		Name:        s.meta.Name,
		Version:     s.meta.Version,
		DisplayName: "Plinth object store",
		Description: "Backups and recovery for CloudNativePG: WAL archiving and restore, online base backups, " +
			"point-in-time recovery and retention in S3-compatible and POSIX object stores, in barman-cloud's layout, natively in Go.",
		ProjectUrl:    "https://github.com/plinth-dev/plinth",
		RepositoryUrl: "https://github.com/plinth-dev/plinth",
		License:       "Apache-2.0",
		LicenseUrl:    cnpgiplugin.LicenseURL,
		Maturity:      "alpha",
		Vendor:        "Plinth",
		Manifest:      s.meta.Manifest,
	}, nil
}

// GetPluginCapabilities lists the services this plugin serves.
func (s *IdentityServer) GetPluginCapabilities(context.Context, *identityv1.GetPluginCapabilitiesRequest) (*identityv1.GetPluginCapabilitiesResponse, error) {
	resp := &identityv1.GetPluginCapabilitiesResponse{}
	for _, t := range s.services {
		resp.Capabilities = append(resp.Capabilities, &identityv1.PluginCapability{
			Type: &identityv1.PluginCapability_Service_{Service: &identityv1.PluginCapability_Service{Type: t}},
		})
	}
	return resp, nil
}

// probeTimeout keeps Probe cheap: CloudNativePG calls it on every pooled connection
// checkout, before each WAL call.
const probeTimeout = time.Second

// Probe answers ready=false, never an error, while the catalog is unreachable: the operator
// only looks at the status, and an error would fail even calls that could still succeed.
func (s *IdentityServer) Probe(ctx context.Context, _ *identityv1.ProbeRequest) (*identityv1.ProbeResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return &identityv1.ProbeResponse{Ready: s.ping(ctx) == nil}, nil
}
