package maas

import (
	"net/netip"
	"testing"
)

// FuzzDecodeMachine: whatever a MAAS (or an impostor) answers, decoding returns an error or a
// machine within the limits kaas stores — never a panic, never unbounded text.
func FuzzDecodeMachine(f *testing.F) {
	f.Add([]byte(`{"system_id":"4y3h7n","hostname":"node-001","fqdn":"node-001.maas","status":6,"status_name":"Deployed",
		"status_message":"Deployed","ip_addresses":["10.20.0.2","fd00::2"],"tag_names":["gpu"],"owner":"kaas",
		"pool":{"name":"default","id":0},"zone":{"name":"default","id":1},"resource_uri":"/MAAS/api/2.0/machines/4y3h7n/"}`))
	f.Add([]byte(`{"system_id":"x","status":11,"status_message":"Installation failed","ip_addresses":null,"pool":null}`))
	f.Add([]byte(`{"system_id":"","status":-1}`))
	f.Add([]byte(`{"system_id":"a","ip_addresses":["not-an-ip"]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"system_id":"a","status":1e99}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := DecodeMachine(body)
		if err != nil {
			return
		}
		if m.SystemID == "" || len(m.SystemID) > maxIDLen || len(m.StatusMessage) > maxTextLen || len(m.IPAddresses) > maxAddresses {
			t.Fatalf("accepted out-of-bounds machine %+v", m)
		}
		for _, a := range m.IPAddresses {
			if _, err := netip.ParseAddr(a); err != nil {
				t.Fatalf("accepted address %q", a)
			}
		}
		_ = m.Name()
	})
}

// FuzzDecodeMachines: the list form, as machines/?agent_name=... answers.
func FuzzDecodeMachines(f *testing.F) {
	f.Add([]byte(`[{"system_id":"4y3h7n","hostname":"node-001","status":10,"status_name":"Allocated","ip_addresses":[]}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[null]`))
	f.Add([]byte(`{"system_id":"a"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, err := DecodeMachines(body)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.SystemID == "" || len(m.SystemID) > maxIDLen {
				t.Fatalf("accepted machine without a valid id: %+v", m)
			}
		}
	})
}
