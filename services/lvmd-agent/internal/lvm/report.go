package lvm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Reports are lvm's `--reportformat json` output: {"report": [{"vg": [{...}]}]}. Every value
// is a string in lvm2's "json" format and a number in "json_std"; both are accepted. The
// decoder is strict about what the agent relies on (sizes must be integers, names present)
// and tolerant of what it does not (extra fields, extra report sections), so an lvm upgrade
// that adds columns changes nothing and a garbled report is an error, never a guess.

// maxReport bounds what a report may hold: lvm prints far less for any real volume group.
const maxReport = 64 << 20

type rawReport struct {
	Report []map[string][]map[string]json.RawMessage `json:"report"`
}

// rows returns the rows of section ("vg", "lv", "pv") of a report.
func rows(out []byte, section string) ([]row, error) {
	if len(out) > maxReport {
		return nil, fmt.Errorf("lvm report is %d bytes; refusing to parse more than %d", len(out), maxReport)
	}
	var r rawReport
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("lvm report is not JSON: %w", err)
	}
	if r.Report == nil {
		return nil, errors.New(`lvm report has no "report" array`)
	}
	var out2 []row
	for _, part := range r.Report {
		for _, fields := range part[section] {
			out2 = append(out2, row(fields))
		}
	}
	return out2, nil
}

// row is one line of a report.
type row map[string]json.RawMessage

// str returns a field as text; absent is "".
func (r row) str(field string) (string, error) {
	raw, ok := r[field]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("field %s is neither a string nor a number", field)
}

// required returns a non-empty text field.
func (r row) required(field string) (string, error) {
	s, err := r.str(field)
	if err == nil && s == "" {
		err = fmt.Errorf("field %s is missing", field)
	}
	return s, err
}

// uint returns a non-negative integer field (sizes with --units b --nosuffix).
func (r row) uint(field string) (uint64, error) {
	s, err := r.required(field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %q is not a byte count", field, clip(s))
	}
	return v, nil
}

// int returns an integer field that may be -1 (kernel numbers of an inactive volume).
func (r row) int(field string) (int64, error) {
	s, err := r.required(field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s: %q is not an integer", field, clip(s))
	}
	return v, nil
}

// percent returns a percentage field: empty (a volume that has none, or an inactive pool)
// is 0; anything else must be a number from 0 to 100.
func (r row) percent(field string) (float64, error) {
	s, err := r.str(field)
	if err != nil || s == "" {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 100) {
		return 0, fmt.Errorf("field %s: %q is not a percentage", field, clip(s))
	}
	return v, nil
}

// parseVGs decodes `vgs` output with vgFields.
func parseVGs(out []byte) ([]VGInfo, error) {
	rs, err := rows(out, "vg")
	if err != nil {
		return nil, err
	}
	vgs := make([]VGInfo, 0, len(rs))
	for _, r := range rs {
		var v VGInfo
		var errs [6]error
		v.Name, errs[0] = r.required("vg_name")
		v.Size, errs[1] = r.uint("vg_size")
		v.Free, errs[2] = r.uint("vg_free")
		v.ExtentSize, errs[3] = r.uint("vg_extent_size")
		v.ExtentCount, errs[4] = r.uint("vg_extent_count")
		v.FreeExtents, errs[5] = r.uint("vg_free_count")
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("vgs report: %w", err)
		}
		if v.ExtentSize == 0 || v.Free > v.Size || v.FreeExtents > v.ExtentCount {
			return nil, fmt.Errorf("vgs report for %s is inconsistent (extent size %d, free %d of %d, free extents %d of %d)",
				clip(v.Name), v.ExtentSize, v.Free, v.Size, v.FreeExtents, v.ExtentCount)
		}
		vgs = append(vgs, v)
	}
	return vgs, nil
}

// parseLVs decodes `lvs` output with lvFields: one row per volume.
func parseLVs(out []byte) ([]LV, error) {
	rs, err := rows(out, "lv")
	if err != nil {
		return nil, err
	}
	lvs := make([]LV, 0, len(rs))
	for _, r := range rs {
		var lv LV
		var errs [11]error
		var tags string
		var major, minor int64
		lv.Name, errs[0] = r.required("lv_name")
		lv.Size, errs[1] = r.uint("lv_size")
		tags, errs[2] = r.str("lv_tags")
		major, errs[3] = r.int("lv_kernel_major")
		minor, errs[4] = r.int("lv_kernel_minor")
		lv.Attr, errs[5] = r.str("lv_attr")
		lv.Path, errs[6] = r.str("lv_path")
		lv.Pool, errs[7] = r.str("pool_lv")
		lv.Origin, errs[8] = r.str("origin")
		lv.DataPercent, errs[9] = r.percent("data_percent")
		lv.MetadataPercent, errs[10] = r.percent("metadata_percent")
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("lvs report: %w", err)
		}
		if tags != "" {
			lv.Tags = strings.Split(tags, ",")
		}
		// Inactive volumes (and every volume in metadata-only mode) report -1.
		if major >= 0 && major <= 1<<32-1 && minor >= 0 && minor <= 1<<32-1 {
			lv.Major, lv.Minor = uint32(major), uint32(minor)
		}
		lvs = append(lvs, lv)
	}
	return lvs, nil
}

// parsePVs decodes `pvs` output with pvFields.
func parsePVs(out []byte) ([]PV, error) {
	rs, err := rows(out, "pv")
	if err != nil {
		return nil, err
	}
	pvs := make([]PV, 0, len(rs))
	for _, r := range rs {
		var pv PV
		var errs [3]error
		pv.Name, errs[0] = r.required("pv_name")
		pv.PEStart, errs[1] = r.uint("pe_start")
		pv.VG, errs[2] = r.str("vg_name")
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("pvs report: %w", err)
		}
		pvs = append(pvs, pv)
	}
	return pvs, nil
}

// parseSegments decodes `lvs` output with segFields: one row per segment of one volume.
func parseSegments(out []byte) ([]Segment, error) {
	rs, err := rows(out, "lv")
	if err != nil {
		return nil, err
	}
	segs := make([]Segment, 0, len(rs))
	for _, r := range rs {
		var s Segment
		var errs [6]error
		var ranges string
		var stripes uint64
		s.Type, errs[0] = r.required("segtype")
		s.StartExtent, errs[1] = r.uint("seg_start_pe")
		s.Extents, errs[2] = r.uint("seg_size_pe")
		ranges, errs[3] = r.str("seg_pe_ranges")
		stripes, errs[4] = r.uint("stripes")
		s.StripeSize, errs[5] = r.uint("stripe_size")
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("segment report: %w", err)
		}
		if s.Areas, err = parseRanges(ranges); err != nil {
			return nil, fmt.Errorf("segment report: %w", err)
		}
		if stripes == 0 || uint64(len(s.Areas)) != stripes {
			return nil, fmt.Errorf("segment report: %d stripes but %d physical ranges", stripes, len(s.Areas))
		}
		segs = append(segs, s)
	}
	return segs, nil
}

// parseRanges reads seg_pe_ranges: "PV:FIRST-LAST" per stripe, separated by spaces (lvm2
// 2.03) or commas (older releases).
func parseRanges(s string) ([]Area, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	areas := make([]Area, 0, len(fields))
	for _, f := range fields {
		i := strings.LastIndexByte(f, ':')
		if i <= 0 {
			return nil, fmt.Errorf("physical range %q is not PV:FIRST-LAST", clip(f))
		}
		first, last, ok := strings.Cut(f[i+1:], "-")
		a, err1 := strconv.ParseUint(first, 10, 64)
		b, err2 := strconv.ParseUint(last, 10, 64)
		if !ok || err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("physical range %q is not PV:FIRST-LAST", clip(f))
		}
		areas = append(areas, Area{PV: f[:i], FirstExtent: a, Extents: b - a + 1})
	}
	return areas, nil
}

// clip bounds what an error repeats from a report.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
