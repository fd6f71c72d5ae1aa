package ceph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Metric is one sample of the Prometheus text exposition format.
type Metric struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// maxLabels bounds the labels of one sample; Ceph's have at most ten.
const maxLabels = 64

// ParseMetrics reads the Prometheus text exposition format (version 0.0.4) the mgr's
// prometheus module serves: comments and blank lines are skipped, timestamps ignored. A
// malformed line fails the whole parse: the body is then not what the module serves.
func ParseMetrics(data []byte) ([]Metric, error) {
	var out []Metric
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		m, err := parseSample(s)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w", line, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}

// parseSample reads `name{label="value",…} value [timestamp]`.
func parseSample(s string) (Metric, error) {
	end := strings.IndexAny(s, "{ \t")
	if end <= 0 {
		return Metric{}, errors.New("no metric name")
	}
	m := Metric{Name: s[:end]}
	if !validName(m.Name) {
		return Metric{}, errors.New("invalid metric name")
	}
	rest := s[end:]
	if rest[0] == '{' {
		labels, after, err := parseLabels(rest[1:])
		if err != nil {
			return Metric{}, err
		}
		m.Labels, rest = labels, after
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return Metric{}, errors.New("want a value and an optional timestamp")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return Metric{}, errors.New("invalid value")
	}
	m.Value = v
	return m, nil
}

// parseLabels reads `label="value",…}` and returns what follows the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || !validName(strings.TrimSpace(s[:eq])) {
			return nil, "", errors.New("invalid label name")
		}
		name := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return nil, "", errors.New("label value is not quoted")
		}
		value, n, err := unquote(s[1:])
		if err != nil {
			return nil, "", err
		}
		if len(labels) >= maxLabels {
			return nil, "", errors.New("too many labels")
		}
		labels[name] = text(value, maxMessage)
		s = strings.TrimLeft(s[1+n:], " \t")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "}") {
			return nil, "", errors.New("expected , or } after a label")
		}
	}
}

// unquote reads a label value up to its closing quote, undoing the \\, \" and \n escapes,
// and returns how many bytes it consumed (the closing quote included).
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i == len(s) {
				return "", 0, errors.New("unterminated escape")
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case '\\', '"':
				b.WriteByte(s[i])
			default:
				return "", 0, errors.New("invalid escape")
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated label value")
}

// validName: [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	for i, c := range s {
		letter := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}
