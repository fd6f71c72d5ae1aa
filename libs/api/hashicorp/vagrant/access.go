package vagrant

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	// Vagrant's own tokens are checked by vagrant-server (routes.Own at the gateway); these
	// kinds apply to the session tokens it issues to Plinth users, which carry their role.
	access.Declare("hashicorp.vagrant.Vagrant", map[string]access.Kind{
		"GetVersionInfo": access.Read,
		"UpsertBasis":    access.Write,
		"GetBasis":       access.Read,
		"FindBasis":      access.Read,
		"ListBasis":      access.Read,
		"UpsertProject":  access.Write,
		"GetProject":     access.Read,
		"FindProject":    access.Read,
		"ListProjects":   access.Read,
		"UpsertTarget":   access.Write,
		"DeleteTarget":   access.Write,
		"GetTarget":      access.Read,
		"FindTarget":     access.Read,
		"ListTargets":    access.Read,
		"UpsertBox":      access.Write,
		"DeleteBox":      access.Write,
		"GetBox":         access.Read,
		"ListBoxes":      access.Read,
		"FindBox":        access.Read,
		"GetLogStream":   access.Read,
		"QueueJob":       access.Write,
		"CancelJob":      access.Write,
		"GetJob":         access.Read,
		"_ListJobs":      access.Read,
		"ValidateJob":    access.Read, // queues nothing
		"GetJobStream":   access.Read,
		"PruneOldJobs":   access.Write,
		"GetRunner":      access.Read,
		"BootstrapToken": access.Write,
		// Login and invite tokens outlive the caller's session: user administration, so an
		// operator's session token cannot turn itself into a token that survives sign-out.
		"GenerateInviteToken": access.UserAdmin,
		"GenerateLoginToken":  access.UserAdmin,
		"ConvertInviteToken":  access.Write,
		"RunnerConfig":        access.Write,
		"RunnerJobStream":     access.Write,
	})
}
