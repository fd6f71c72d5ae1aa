package runner

import (
	"fmt"
	"strings"
	"time"
)

// StatusText is what /readyz says about one runner id after "ok".
func StatusText(st Status) string {
	var b strings.Builder
	if st.Registered {
		fmt.Fprintf(&b, "runner %s: registered with vagrant-server since %s\n", st.ID, st.Since.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(&b, "runner %s: not registered: %s\n", st.ID, st.Problem)
	}
	fmt.Fprintf(&b, "runner %s: running %d of %d jobs at once", st.ID, len(st.Jobs), max(st.Slots, 1))
	if len(st.Jobs) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(st.Jobs, ", "))
	}
	b.WriteString("\n")
	return b.String()
}
