package backup

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"strconv"
	"strings"
)

// keepPrefix introduces the keep-last count in a policy specification ("keep:5").
const keepPrefix = "keep:"

// ParsePolicySpec reads a retention policy as one string, the form of the cluster parameter
// retentionPolicy: a recovery window ("7d"), a keep-last count ("keep:5"), or both separated
// by a comma ("7d,keep:5", in either order). Spaces around the parts are ignored.
func ParsePolicySpec(spec string) (Policy, error) {
	var (
		window   string
		keepLast int
		sawKeep  bool
	)
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		switch n, isKeep := strings.CutPrefix(part, keepPrefix); {
		case part == "":
			return Policy{}, invalid("retentionPolicy", "%s has an empty part: give a recovery window (7d), keep:N, or both as 7d,keep:N", input.Quote(spec))
		case isKeep:
			k, err := strconv.Atoi(n)
			if err != nil || k < 1 || sawKeep {
				return Policy{}, invalid("retentionPolicy", "%s: keep:N takes one positive whole number of backups, once (e.g. keep:5)", input.Quote(spec))
			}
			keepLast, sawKeep = k, true
		case window != "":
			return Policy{}, invalid("retentionPolicy", "%s names two recovery windows: give one (e.g. 7d,keep:5)", input.Quote(spec))
		default:
			if !windowRE.MatchString(part) {
				return Policy{}, invalid("retentionPolicy", "%s: %s is neither a recovery window (a count and a unit h, d, w or m, e.g. 7d) nor keep:N", input.Quote(spec), input.Quote(part))
			}
			window = part
		}
	}
	return ParsePolicy(window, keepLast)
}

// Spec prints the policy in the form ParsePolicySpec reads.
func (p Policy) Spec() string {
	var parts []string
	if p.Window.N > 0 {
		parts = append(parts, strconv.Itoa(p.Window.N)+string(p.Window.Unit))
	}
	if p.KeepLast > 0 {
		parts = append(parts, keepPrefix+strconv.Itoa(p.KeepLast))
	}
	return strings.Join(parts, ",")
}
