package vagrantv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("plinth.vagrant.v1.RunnerService", map[string]access.Kind{
		"ListRunners": access.Read,
	})
	access.Declare("plinth.vagrant.v1.SessionTokenService", map[string]access.Kind{
		"IssueSessionToken": access.Session,
	})
}
