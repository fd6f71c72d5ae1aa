package sso

import (
	"regexp"
	"strings"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

// strength orders the roles: of several a person's claims map to, the strongest wins.
var strength = map[authz.Role]int{authz.Viewer: 1, authz.Operator: 2, authz.Admin: 3}

// RoleOf is the role the claims map to: the strongest role of a value of the provider's
// RoleClaim (a string or a list of strings), else DefaultRole; ok is false when neither gives
// one (the person is refused).
func (p *Provider) RoleOf(claims map[string]any) (role authz.Role, ok bool) {
	for _, v := range claimValues(claims[p.RoleClaim]) {
		if r, mapped := p.Roles[v]; mapped && strength[r] > strength[role] {
			role = r
		}
	}
	if role != "" {
		return role, true
	}
	return p.DefaultRole, p.DefaultRole != ""
}

// claimValues are the strings of a claim: one string, or the strings of a list.
func claimValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return v
	}
	return nil
}

var notUsername = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// UsernameOf is the username a new user of the provider is created with: the provider's
// UsernameClaim (then the email's local part, then the provider's name + "-user"), made a valid
// Plinth username (3 to 24 characters of [a-zA-Z0-9-_]). It is a display name only: the user is
// the (provider, subject) pair, and a name already taken gets a suffix.
func (p *Provider) UsernameOf(claims map[string]any) string {
	name, _ := claims[p.UsernameClaim].(string)
	if name == "" {
		email, _ := claims["email"].(string)
		name, _, _ = strings.Cut(email, "@")
	}
	name = strings.Trim(notUsername.ReplaceAllString(name, "-"), "-")
	if len(name) > 24 {
		name = name[:24]
	}
	if len(name) < 3 {
		name = p.Name + "-user"
		if len(name) > 24 {
			name = name[len(name)-24:]
		}
	}
	return name
}
