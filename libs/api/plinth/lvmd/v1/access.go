package lvmdv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("plinth.lvmd.v1.JobService", map[string]access.Kind{
		"ListJobs": access.Read,
		"GetJob":   access.Read,
		// A restore creates a volume; a delete removes a backup's objects; a dismissal
		// removes a job's row: all three change things, so a viewer may call none.
		"RestoreBackup": access.Write,
		"DeleteBackup":  access.Write,
		"DismissJob":    access.Write,
	})
	access.Declare("plinth.lvmd.v1.VolumeService", map[string]access.Kind{
		"GetVolume":   access.Read,
		"ListVolumes": access.Read,
	})
}
