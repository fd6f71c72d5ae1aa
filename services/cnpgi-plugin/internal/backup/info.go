package backup

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is a base backup's state, as barman writes it in backup.info.
type Status string

// The states the plugin writes; barman also knows EMPTY, WAITING_FOR_WALS and SYNCING, which
// are read as they are and never count as usable.
const (
	StatusStarted Status = "STARTED"
	StatusDone    Status = "DONE"
	StatusFailed  Status = "FAILED"
)

// Tablespace is a user tablespace of the backed-up cluster.
type Tablespace struct {
	Name     string
	OID      uint32
	Location string
}

// Info is a backup's backup.info: barman's metadata file (barman.infofile.BackupInfo), read
// and written in barman's format so that barman-cloud-backup-list, -restore and CloudNativePG
// see our backups, and we see theirs.
type Info struct {
	// ID is the backup's directory name, barman's YYYYMMDDTHHMMSS; not stored in the file.
	ID string
	// Name is a human name (the CloudNativePG Backup object's), barman's backup_name.
	Name       string
	Status     Status
	ServerName string
	Timeline   uint32
	// BeginTime is just before the backup started; EndTime after it ended.
	BeginTime, EndTime time.Time
	BeginLSN, EndLSN   LSN
	// BeginWAL and EndWAL name the first and last segments recovery needs.
	BeginWAL, EndWAL       string
	BeginOffset, EndOffset int64
	// Size is the backup's size before compression, in bytes.
	Size int64
	// Label is the backup_label PostgreSQL returned from pg_backup_stop.
	Label                       string
	PGData, ConfigFile, HBAFile string
	IdentFile                   string
	Tablespaces                 []Tablespace
	Version                     int   // server_version_num, 150020
	SegmentSize                 int64 // wal_segment_size in bytes
	SystemID                    string
	Error                       string
	CopyTime                    time.Duration
	Compression                 string // barman-cloud leaves it None; the file suffix tells
}

// pyTimeLayouts are the forms Python's str(datetime) takes (with and without microseconds,
// with and without a zone); the first is what we write.
var pyTimeLayouts = []string{
	"2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05-07:00",
	"2006-01-02 15:04:05.999999", "2006-01-02 15:04:05", time.RFC3339Nano,
}

func pyTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02 15:04:05-07:00")
	}
	return t.Format("2006-01-02 15:04:05.000000-07:00")
}

func parsePyTime(s string) (time.Time, error) {
	for _, l := range pyTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised time %q", s)
}

// Encode writes the file as barman does: every field barman knows, sorted by name,
// "key=value" with None for unset values, so that every barman-cloud command of 3.4 and
// later reads it. Only fields barman knows may appear: it refuses files with others.
func (in *Info) Encode() []byte {
	none := func(s string) string {
		if s == "" {
			return "None"
		}
		return s
	}
	str := func(s string) string {
		if s == "" {
			return "None"
		}
		return pyRepr(s)
	}
	num := func(n int64, set bool) string {
		if !set {
			return "None"
		}
		return strconv.FormatInt(n, 10)
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "None"
		}
		return pyTime(t)
	}
	lsn := func(l LSN) string {
		if l == 0 {
			return "None"
		}
		return l.String()
	}
	fields := map[string]string{
		"backup_label": str(in.Label), "begin_offset": num(in.BeginOffset, in.BeginLSN != 0),
		"begin_time": when(in.BeginTime), "begin_wal": none(in.BeginWAL), "begin_xlog": lsn(in.BeginLSN),
		"compression": none(in.Compression), "config_file": none(in.ConfigFile), "copy_stats": "None",
		"deduplicated_size": "None", "end_offset": num(in.EndOffset, in.EndLSN != 0), "end_time": when(in.EndTime),
		"end_wal": none(in.EndWAL), "end_xlog": lsn(in.EndLSN), "error": none(firstLine(in.Error)), "hba_file": none(in.HBAFile),
		"ident_file": none(in.IdentFile), "included_files": "None", "mode": "None", "pgdata": none(in.PGData),
		// size stays None: barman-cloud-backup-show 3.4 adds wal_size (which backup.info
		// cannot hold) to any size it finds and fails with KeyError 'wal_size'; barman-cloud's
		// own backups leave it None too. Our size travels in the comment line below.
		"server_name": none(in.ServerName), "size": "None", "status": none(string(in.Status)),
		"systemid": none(in.SystemID), "tablespaces": tablespacesRepr(in.Tablespaces),
		"timeline": num(int64(in.Timeline), in.Timeline > 0), "version": num(int64(in.Version), in.Version > 0),
		"xlog_segment_size": num(in.SegmentSize, in.SegmentSize > 0),
	}
	if in.CopyTime > 0 {
		secs := strconv.FormatFloat(in.CopyTime.Seconds(), 'f', 6, 64)
		fields["copy_stats"] = "{'total_time': " + secs + ", 'copy_time': " + secs + ", 'number_of_workers': 1}"
	}
	if in.Name != "" {
		fields["backup_name"] = firstLine(in.Name)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k + "=" + fields[k] + "\n")
	}
	if in.Size > 0 {
		// barman skips comment lines; DecodeInfo reads this one.
		b.WriteString(plinthComment + "size=" + strconv.FormatInt(in.Size, 10) + "\n")
	}
	return b.Bytes()
}

// plinthComment starts the comment lines holding what barman's fields cannot.
const plinthComment = "#plinth: "

// firstLine keeps a value on its line: barman's format has one field per line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

func tablespacesRepr(ts []Tablespace) string {
	if len(ts) == 0 {
		return "None"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("(%s, %d, %s)", pyRepr(t.Name), t.OID, pyRepr(t.Location))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// DecodeInfo reads a backup.info written by barman (any version) or by us. Fields it does
// not use are skipped, so files of newer barman versions are read too.
func DecodeInfo(id string, data []byte) (*Info, error) {
	in := &Info{ID: id}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, plinthComment); ok && in.Size == 0 {
			if n, ok := strings.CutPrefix(rest, "size="); ok {
				in.Size, _ = strconv.ParseInt(n, 10, 64)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("backup.info of %s: invalid line %q", id, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v == "None" {
			continue
		}
		if err := in.set(k, v); err != nil {
			return nil, fmt.Errorf("backup.info of %s: %s: %w", id, k, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("backup.info of %s: %w", id, err)
	}
	return in, nil
}

func (in *Info) set(k, v string) error {
	var err error
	atoi := func(dst *int64) { *dst, err = strconv.ParseInt(v, 10, 64) }
	switch k {
	case "backup_label":
		in.Label, err = pyString(v)
	case "backup_name":
		in.Name = v
	case "status":
		in.Status = Status(v)
	case "server_name":
		in.ServerName = v
	case "timeline":
		var n int64
		atoi(&n)
		in.Timeline = uint32(n)
	case "begin_time":
		in.BeginTime, err = parsePyTime(v)
	case "end_time":
		in.EndTime, err = parsePyTime(v)
	case "begin_xlog":
		in.BeginLSN, err = ParseLSN(v)
	case "end_xlog":
		in.EndLSN, err = ParseLSN(v)
	case "begin_wal":
		in.BeginWAL = v
	case "end_wal":
		in.EndWAL = v
	case "begin_offset":
		atoi(&in.BeginOffset)
	case "end_offset":
		atoi(&in.EndOffset)
	case "size":
		atoi(&in.Size)
	case "pgdata":
		in.PGData = v
	case "config_file":
		in.ConfigFile = v
	case "hba_file":
		in.HBAFile = v
	case "ident_file":
		in.IdentFile = v
	case "tablespaces":
		in.Tablespaces, err = parseTablespaces(v)
	case "version":
		var n int64
		atoi(&n)
		in.Version = int(n)
	case "xlog_segment_size":
		atoi(&in.SegmentSize)
	case "systemid":
		in.SystemID = v
	case "error":
		in.Error = v
	case "compression":
		in.Compression = v
	}
	return err
}

func pyString(v string) (string, error) {
	p, err := pyParse(v)
	if err != nil {
		return "", err
	}
	s, ok := p.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", p)
	}
	return s, nil
}

// parseTablespaces reads barman's [('name', oid, 'location'), ...].
func parseTablespaces(v string) ([]Tablespace, error) {
	p, err := pyParse(v)
	if err != nil {
		return nil, err
	}
	list, ok := p.([]pyValue)
	if !ok {
		return nil, fmt.Errorf("want a list, got %T", p)
	}
	var out []Tablespace
	for _, item := range list {
		tup, ok := item.([]pyValue)
		if !ok || len(tup) != 3 {
			return nil, fmt.Errorf("want (name, oid, location) tuples, got %v", item)
		}
		name, ok1 := tup[0].(string)
		oid, ok2 := tup[1].(int64)
		loc, ok3 := tup[2].(string)
		if !ok1 || !ok2 || !ok3 || oid <= 0 || oid > 1<<32-1 {
			return nil, fmt.Errorf("want (name, oid, location) tuples, got %v", item)
		}
		out = append(out, Tablespace{Name: name, OID: uint32(oid), Location: loc})
	}
	return out, nil
}
