package conformance

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoregistry"
)

// apis are the upstream APIs Plinth speaks, by the name of their facts file.
var apis = []string{"cnpgi", "stats-auth", "lvmd", "kaas", "vagrant", koorV1API}

// TestWireConformance compares every service, method, message, field and
// enum value of every upstream API with what our generated packages
// register.
func TestWireConformance(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) {
			facts, err := loadFacts(api)
			if err != nil {
				t.Fatal(err)
			}
			problems := checkAPI(facts, protoregistry.GlobalFiles)
			t.Logf("%s: checked %d upstream facts", api, facts.items())
			if len(problems) > 0 {
				t.Errorf("%s: %d wire differences from upstream (fix the proto under proto/, regenerate, and check imports_test.go links its package):\n%s",
					api, len(problems), strings.Join(problems, "\n"))
			}
		})
	}
}

// TestFactsCoverTheAPIs guards against checking less than we think: each
// facts file must hold the definitions the wire documents single out.
func TestFactsCoverTheAPIs(t *testing.T) {
	want := map[string]int{ // minimum number of services per API
		"cnpgi": 9, "stats-auth": 2, "lvmd": 2, "kaas": 1, "vagrant": 1, koorV1API: 2,
	}
	for _, api := range apis {
		facts, err := loadFacts(api)
		if err != nil {
			t.Fatal(err)
		}
		if len(facts.Services) < want[api] || len(facts.Messages) == 0 {
			t.Errorf("%s: %d services and %d messages in the facts, want at least %d services and some messages",
				api, len(facts.Services), len(facts.Messages), want[api])
		}
	}
}
