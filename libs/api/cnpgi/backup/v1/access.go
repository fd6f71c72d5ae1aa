package backupv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("cnpgi.backup.v1.Backup", map[string]access.Kind{
		"GetCapabilities": access.Read,
		"Backup":          access.Write,
	})
}
