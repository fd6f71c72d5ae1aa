package backup

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePolicySpec(t *testing.T) {
	for _, tc := range []struct {
		spec, want, problem string
	}{
		{spec: "7d", want: "7d"},
		{spec: "keep:5", want: "keep:5"},
		{spec: "7d,keep:5", want: "7d,keep:5"},
		{spec: " keep:2 , 4w ", want: "4w,keep:2"},
		{spec: "3m", want: "3m"},
		{spec: "", problem: "empty part"},
		{spec: "7d,", problem: "empty part"},
		{spec: "7x", problem: "neither a recovery window"},
		{spec: "keep:0", problem: "positive whole number"},
		{spec: "keep:-1", problem: "positive whole number"},
		{spec: "keep:two", problem: "positive whole number"},
		{spec: "keep:1,keep:2", problem: "once"},
		{spec: "7d,2w", problem: "two recovery windows"},
		{spec: "0d", problem: "neither a recovery window"},
	} {
		p, err := ParsePolicySpec(tc.spec)
		if tc.problem != "" {
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindInvalid || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("%q: error %v, want one saying %q", tc.spec, err, tc.problem)
			}
			continue
		}
		if err != nil || p.Spec() != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.spec, p.Spec(), err, tc.want)
		}
		if again, err := ParsePolicySpec(p.Spec()); err != nil || again != p {
			t.Errorf("%q does not round-trip: %v %v", tc.spec, again, err)
		}
	}
}
