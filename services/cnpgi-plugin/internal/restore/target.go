package restore

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/backup"
)

// Target is a CloudNativePG recovery target (spec.bootstrap.recovery.recoveryTarget): where
// replay stops, and optionally which backup to start from.
type Target struct {
	BackupID  string `json:"backupID"`
	TargetTLI string `json:"targetTLI"`
	XID       string `json:"targetXID"`
	Name      string `json:"targetName"`
	LSN       string `json:"targetLSN"`
	Time      string `json:"targetTime"`
	Immediate *bool  `json:"targetImmediate"`
	Exclusive *bool  `json:"exclusive"`

	lsn  backup.LSN
	time time.Time
}

// targetPath is where the target sits in the Cluster, for messages.
const targetPath = "spec.bootstrap.recovery.recoveryTarget"

// ParseTarget reads the recovery target of a Cluster definition (none: replay everything).
func ParseTarget(definition []byte) (Target, error) {
	var c struct {
		Spec struct {
			Bootstrap *struct {
				Recovery *struct {
					RecoveryTarget *Target `json:"recoveryTarget"`
				} `json:"recovery"`
			} `json:"bootstrap"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(definition, &c); err != nil {
		return Target{}, &backup.Error{Kind: backup.KindInvalid, Field: "cluster_definition", Msg: "is not a Cluster in JSON: " + err.Error()}
	}
	b := c.Spec.Bootstrap
	if b == nil || b.Recovery == nil || b.Recovery.RecoveryTarget == nil {
		return Target{}, nil
	}
	t := *b.Recovery.RecoveryTarget
	return t, t.validate()
}

// timeLayouts are the forms of targetTime CloudNativePG accepts: RFC 3339 and PostgreSQL's.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999"}

func (t *Target) validate() error {
	bad := func(field, format string, args ...any) error {
		return &backup.Error{Kind: backup.KindInvalid, Field: targetPath + "." + field, Msg: fmt.Sprintf(format, args...)}
	}
	set := 0
	for _, v := range []string{t.XID, t.Name, t.LSN, t.Time} {
		if v != "" {
			set++
		}
	}
	if t.Immediate != nil && *t.Immediate {
		set++
	}
	if set > 1 {
		return bad("", "set at most one of targetXID, targetName, targetLSN, targetTime and targetImmediate")
	}
	if t.LSN != "" {
		l, err := backup.ParseLSN(t.LSN)
		if err != nil {
			return bad("targetLSN", "%v", err)
		}
		t.lsn = l
	}
	if t.Time != "" {
		var err error
		for _, layout := range timeLayouts {
			if t.time, err = time.Parse(layout, t.Time); err == nil {
				break
			}
		}
		if err != nil {
			return bad("targetTime", "%s is not a time (use RFC 3339, e.g. 2026-01-02T03:04:05Z)", input.Quote(t.Time))
		}
	}
	if t.XID != "" {
		if _, err := strconv.ParseUint(t.XID, 10, 64); err != nil {
			return bad("targetXID", "%s is not a transaction id", input.Quote(t.XID))
		}
	}
	if tli := t.TargetTLI; tli != "" && tli != "latest" && tli != "current" {
		if _, err := strconv.ParseUint(tli, 10, 32); err != nil {
			return bad("targetTLI", "%s is not latest, current or a timeline number", input.Quote(tli))
		}
	}
	if t.BackupID != "" && !backup.IsID(t.BackupID) {
		return bad("backupID", "%s is not a backup id (YYYYMMDDTHHMMSS)", input.Quote(t.BackupID))
	}
	return nil
}

// settings renders the target as PostgreSQL recovery settings, as CloudNativePG does.
func (t Target) settings() []string {
	var out []string
	add := func(k, v string) { out = append(out, k+" = "+confQuote(v)) }
	if t.TargetTLI != "" {
		add("recovery_target_timeline", t.TargetTLI)
	}
	switch {
	case t.XID != "":
		add("recovery_target_xid", t.XID)
	case t.Name != "":
		add("recovery_target_name", t.Name)
	case t.LSN != "":
		add("recovery_target_lsn", t.LSN)
	case t.Time != "":
		add("recovery_target_time", t.time.UTC().Format("2006-01-02 15:04:05.999999+00"))
	case t.Immediate != nil && *t.Immediate:
		add("recovery_target", "immediate")
	}
	if t.XID != "" || t.LSN != "" || t.Time != "" {
		add("recovery_target_inclusive", strconv.FormatBool(t.Exclusive == nil || !*t.Exclusive))
	}
	return out
}

// choose picks the backup to restore: the one named by backupID, else the newest completed
// backup that can reach the target (ended before targetTime or targetLSN, on a timeline no
// later than a numeric targetTLI).
func (t Target) choose(backups []backup.Stored) (backup.Stored, error) {
	var best *backup.Stored
	for i, b := range backups {
		if !b.Usable() || len(b.Missing()) > 0 {
			if t.BackupID == b.ID {
				return backup.Stored{}, &backup.Error{Kind: backup.KindPrecondition, Field: targetPath + ".backupID",
					Msg: fmt.Sprintf("backup %s is not a complete backup (status %s, missing %v)", b.ID, status(b), b.Missing())}
			}
			continue
		}
		if t.BackupID != "" {
			if b.ID == t.BackupID {
				return b, nil
			}
			continue
		}
		if !t.reachable(b.Info) {
			continue
		}
		if best == nil || b.Info.EndTime.After(best.Info.EndTime) {
			best = &backups[i]
		}
	}
	if t.BackupID != "" {
		return backup.Stored{}, &backup.Error{Kind: backup.KindNotFound, Field: targetPath + ".backupID", Msg: fmt.Sprintf("no backup %s in the recovery source", t.BackupID)}
	}
	if best == nil {
		return backup.Stored{}, &backup.Error{Kind: backup.KindNotFound, Msg: strings.TrimSpace("no completed base backup in the recovery source " + t.describe())}
	}
	return *best, nil
}

func (t Target) reachable(in *backup.Info) bool {
	if tli, err := strconv.ParseUint(t.TargetTLI, 10, 32); err == nil && in.Timeline > uint32(tli) {
		return false
	}
	switch {
	case !t.time.IsZero():
		return !in.EndTime.After(t.time)
	case t.lsn != 0:
		return in.EndLSN <= t.lsn
	}
	return true
}

func (t Target) describe() string {
	var parts []string
	if !t.time.IsZero() {
		parts = append(parts, "that ended before "+t.Time)
	}
	if t.lsn != 0 {
		parts = append(parts, "that ended before LSN "+t.LSN)
	}
	if _, err := strconv.ParseUint(t.TargetTLI, 10, 32); err == nil {
		parts = append(parts, "on timeline "+t.TargetTLI+" or earlier")
	}
	return strings.Join(parts, " ")
}

func status(b backup.Stored) string {
	if b.Info == nil {
		return "unknown (no backup.info)"
	}
	return string(b.Info.Status)
}

// confQuote quotes a value for postgresql.conf: backslashes and single quotes escaped.
func confQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
}
