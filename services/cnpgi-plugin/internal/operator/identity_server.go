package operator

import (
	"context"

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
}

// NewIdentityServer reports meta and the given services, which must be exactly the ones
// registered on the server: the operator calls GetCapabilities of each one it is told of.
func NewIdentityServer(meta Metadata, services []identityv1.PluginCapability_Service_Type) *IdentityServer {
	return &IdentityServer{meta: meta, services: services}
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

// Probe answers ready once the plugin serves: nothing it depends on at run time makes it
// unready. WAL archiving and restore need only the object store, which each call reaches
// (and whose errors it reports) itself; Plinth's catalog database being down stops neither
// (wal.behind). Readiness is a prerequisite for receiving calls (CNPG-I), so an unready
// answer would only turn an outage of the catalog into one of archiving.
func (s *IdentityServer) Probe(context.Context, *identityv1.ProbeRequest) (*identityv1.ProbeResponse, error) {
	return &identityv1.ProbeResponse{Ready: true}, nil
}
