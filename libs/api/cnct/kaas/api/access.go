package api

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("cnct.kaas.api.Cluster", map[string]access.Kind{
		"CreateCluster":                access.Write,
		"GetCluster":                   access.Read,
		"DeleteCluster":                access.Write,
		"GetClusterList":               access.Read,
		"GetClusterNodesStatus":        access.Read,
		"GetVersionInformation":        access.Read,
		"AddNodePool":                  access.Write,
		"DeleteNodePool":               access.Write,
		"ScaleNodePool":                access.Write,
		"GetUpgradeClusterInformation": access.Read,
		"UpgradeCluster":               access.Write,
	})
}
