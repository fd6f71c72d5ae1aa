package authv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("plinth.auth.v1.AdminService", map[string]access.Kind{
		"ListUsers":        access.UserAdmin,
		"CreateUser":       access.UserAdmin,
		"SetUserDisabled":  access.UserAdmin,
		"ResetPassword":    access.UserAdmin,
		"RevokeUserTokens": access.UserAdmin,
		"SetUserRole":      access.UserAdmin,
	})
	// OpenID Connect sign-in begins a session, as Login does: public through the gateway
	// (routes.Table, auth's DefaultPublicPaths), and open to every role.
	access.Declare("plinth.auth.v1.OIDCService", map[string]access.Kind{
		"ListProviders":  access.Session,
		"BeginSignIn":    access.Session,
		"CompleteSignIn": access.Session,
	})
}
