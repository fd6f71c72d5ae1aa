package cli

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"

	identityv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/identity/v1"
	walv1 "github.com/plinth-dev/plinth/libs/api/cnpgi/wal/v1"
)

// handshake repeats what CloudNativePG does on every new plugin connection (metadata,
// capabilities, the WAL service's capabilities, probe), so that a misconfigured socket,
// a plugin of another name or one without WAL support fails with a clear message before
// any WAL is sent.
func handshake(ctx context.Context, conn grpc.ClientConnInterface, pluginName string) error {
	id := identityv1.NewIdentityClient(conn)
	meta, err := id.GetPluginMetadata(ctx, &identityv1.GetPluginMetadataRequest{})
	if err != nil {
		return fmt.Errorf("plugin metadata: %s", describe(err))
	}
	if meta.GetName() != pluginName {
		return fmt.Errorf("the socket serves plugin %q, not %q", meta.GetName(), pluginName)
	}
	caps, err := id.GetPluginCapabilities(ctx, &identityv1.GetPluginCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("plugin capabilities: %s", describe(err))
	}
	if !slices.ContainsFunc(caps.GetCapabilities(), func(c *identityv1.PluginCapability) bool {
		return c.GetService().GetType() == identityv1.PluginCapability_Service_TYPE_WAL_SERVICE
	}) {
		return fmt.Errorf("plugin %q does not serve the WAL service", pluginName)
	}
	walCaps, err := walv1.NewWALClient(conn).GetCapabilities(ctx, &walv1.WALCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("WAL capabilities: %s", describe(err))
	}
	for _, need := range []walv1.WALCapability_RPC_Type{walv1.WALCapability_RPC_TYPE_ARCHIVE_WAL, walv1.WALCapability_RPC_TYPE_RESTORE_WAL} {
		if !slices.ContainsFunc(walCaps.GetCapabilities(), func(c *walv1.WALCapability) bool { return c.GetRpc().GetType() == need }) {
			return fmt.Errorf("plugin %q lacks %s", pluginName, need)
		}
	}
	if _, err := id.Probe(ctx, &identityv1.ProbeRequest{}); err != nil {
		return fmt.Errorf("plugin probe: %s", describe(err))
	}
	return nil
}
