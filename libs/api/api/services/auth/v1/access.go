package authv1

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// the same kinds as the seed's services.auth.AuthService, whose rules these methods share.
func init() {
	access.Declare("api.services.auth.v1.AuthService", map[string]access.Kind{
		"Login":      access.Session,
		"Logout":     access.Session,
		"CheckToken": access.Session,
	})
}
