package lvmdv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("plinth.lvmd.v1.JobService", map[string]access.Kind{
		"ListJobs": access.Read,
		"GetJob":   access.Read,
	})
	access.Declare("plinth.lvmd.v1.VolumeService", map[string]access.Kind{
		"GetVolume":   access.Read,
		"ListVolumes": access.Read,
	})
}
