package testenv

import (
	"strings"
	"sync"
	"testing"
)

// TestRunStoreCasesReopensOnlyInTheRestartVariant: every case runs plain and restart; Restart
// reopens (on the same data) only in the restart variant.
func TestRunStoreCasesReopensOnlyInTheRestartVariant(t *testing.T) {
	type store struct{ generation int }
	var mu sync.Mutex
	seen := map[string]int{}
	cases := []Case[*StoreRun[*store]]{{Name: "restarts once", Run: func(st *StoreRun[*store]) {
		st.Restart()
		mu.Lock()
		defer mu.Unlock()
		seen[st.T.Name()] = st.Store.generation
	}}}
	t.Run("suite", func(t *testing.T) {
		RunStoreCases(t, cases, func(*testing.T) *store { return &store{} },
			func(_ *testing.T, s *store) *store { return &store{generation: s.generation + 1} })
	})
	if len(seen) != 2 {
		t.Fatalf("ran %v, want a plain and a restart run", seen)
	}
	for name, gen := range seen {
		want := 0
		if strings.HasSuffix(name, "/restart") {
			want = 1
		}
		if gen != want {
			t.Errorf("%s: store generation %d after Restart, want %d", name, gen, want)
		}
	}
}
