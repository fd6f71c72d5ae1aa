package ceph

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// number is a JSON value Ceph means as a number: a number, a numeric string ("9"), or null or
// absent (0). Ceph's reports vary between releases (an idle cluster omits its I/O rates, some
// counters are strings), and one odd field must not cost the whole report, so anything else
// decodes as 0 too.
type number float64

func (n *number) UnmarshalJSON(b []byte) error {
	*n = 0
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		b = []byte(strings.TrimSpace(s))
	}
	if f, err := strconv.ParseFloat(string(b), 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		*n = number(f)
	}
	return nil
}

// int is n as an int, clamped so that a huge value cannot overflow.
func (n number) int() int {
	return int(max(min(float64(n), math.MaxInt32), math.MinInt32))
}

// count is n as a non-negative int: a count that decodes negative is nonsense, so 0.
func (n number) count() int { return max(n.int(), 0) }

// bytes is n as a non-negative int64 (sizes, object counts), clamped.
func (n number) bytes() int64 {
	return int64(max(min(float64(n), 1<<62), 0))
}

// timeLayouts are the forms Ceph writes times in: RFC 3339 (monmap), ISO 8601 with a numeric
// zone (mgrmap, osdmap, pool creation) and, in older releases, a space and no zone (UTC).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006-01-02 15:04:05.999999999"}

// cephTime is a time in any of Ceph's forms, or seconds since the epoch; anything else
// decodes as the zero time (shown as unknown) rather than failing the report.
type cephTime struct{ time.Time }

func (t *cephTime) UnmarshalJSON(b []byte) error {
	t.Time = time.Time{}
	var s string
	if json.Unmarshal(b, &s) != nil {
		var secs number
		_ = secs.UnmarshalJSON(b)
		if secs > 0 && secs < 1<<40 {
			t.Time = time.Unix(int64(secs), 0).UTC()
		}
		return nil
	}
	for _, layout := range timeLayouts {
		if parsed, err := time.Parse(layout, s); err == nil {
			t.Time = parsed.UTC()
			return nil
		}
	}
	return nil
}

// Bounds on text taken from Ceph: check messages and names end up in API answers and logs.
const (
	maxMessage = 1 << 10
	maxName    = input.MaxName
)

// text is s made safe for an API answer.
func text(s string, max int) string { return cluster.SafeText(s, max) }
