package authz_test

import (
	"testing"

	_ "github.com/plinth-dev/plinth/libs/api/all"

	"github.com/plinth-dev/plinth/libs/platform/authz"
)

func TestRolesAllow(t *testing.T) {
	cases := []struct {
		role   authz.Role
		method string
		ok     bool
	}{
		{authz.Viewer, "/stats.StatsService/GetClusterStats", true},
		{authz.Viewer, "/cnct.kaas.api.Cluster/GetClusterList", true},
		{authz.Viewer, "/cnct.kaas.api.Cluster/DeleteCluster", false},
		{authz.Viewer, "/proto.LVService/RemoveLV", false},
		{authz.Viewer, "/proto.VGService/Watch", true},
		{authz.Viewer, "/services.auth.AuthService/Logout", true},
		{authz.Viewer, "/plinth.auth.v1.AdminService/ListUsers", false},
		{authz.Operator, "/cnct.kaas.api.Cluster/DeleteCluster", true},
		{authz.Operator, "/cnpgi.wal.v1.WAL/Archive", true},
		{authz.Operator, "/plinth.auth.v1.AdminService/ListUsers", false},
		{authz.Admin, "/plinth.auth.v1.AdminService/CreateUser", true},
		{authz.Admin, "/proto.LVService/CreateLV", true},
		// A method nobody listed is a write.
		{authz.Viewer, "/cnct.kaas.api.Cluster/SomeNewMethod", false},
		{authz.Operator, "/cnct.kaas.api.Cluster/SomeNewMethod", true},
		// No role (an account whose role is unknown) may call nothing.
		{"", "/stats.StatsService/GetClusterStats", false},
		{"root", "/stats.StatsService/GetClusterStats", false},
	}
	for _, c := range cases {
		err := authz.Check(c.role, c.method)
		if (err == nil) != c.ok {
			t.Errorf("Check(%q, %s) = %v, want allowed=%v", c.role, c.method, err, c.ok)
		}
	}
	if err := authz.Check(authz.Viewer, "/proto.LVService/RemoveLV"); err == nil || err.Error() != "role viewer may not call /proto.LVService/RemoveLV (write)" {
		t.Errorf("message: %v", err)
	}
}

func TestParseRole(t *testing.T) {
	for _, s := range []string{"viewer", "Operator", " ADMIN "} {
		if _, err := authz.ParseRole(s); err != nil {
			t.Errorf("ParseRole(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "root", "admins"} {
		if _, err := authz.ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) accepted", s)
		}
	}
}
