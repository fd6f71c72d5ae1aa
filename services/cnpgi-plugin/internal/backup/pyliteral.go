package backup

import (
	"github.com/plinth-dev/plinth/libs/platform/input"

	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// barman's backup.info stores some values as Python literals (repr on write, ast.literal_eval
// on read): the backup label as a string, tablespaces as a list of tuples. These helpers
// write what repr writes and read the subset of Python literals those fields use.

// pyRepr is Python 3's repr of a str.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x80 || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// pyValue is a parsed Python literal: string, int64, nil (None), bool, or []pyValue for
// lists and tuples.
type pyValue any

// pyParse reads one Python literal made of strings, integers, None, booleans, lists and
// tuples (what ast.literal_eval accepts for the fields barman writes).
func pyParse(s string) (pyValue, error) {
	p := &pyParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("python literal: unexpected %s at %d", input.Quote(p.s[p.i:]), p.i)
	}
	return v, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

var errPyEnd = errors.New("python literal: unexpected end")

func (p *pyParser) value() (pyValue, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, errPyEnd
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str()
	case c == '[':
		return p.seq(']')
	case c == '(':
		return p.seq(')')
	case c == '-' || (c >= '0' && c <= '9'):
		j := p.i + 1
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		p.i = j
		return n, err
	}
	for word, v := range map[string]pyValue{"None": nil, "True": true, "False": false} {
		if strings.HasPrefix(p.s[p.i:], word) {
			p.i += len(word)
			return v, nil
		}
	}
	return nil, fmt.Errorf("python literal: unsupported value at %s", input.Quote(p.s[p.i:]))
}

func (p *pyParser) seq(end byte) (pyValue, error) {
	p.i++ // the opening bracket
	items := []pyValue{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return items, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, errPyEnd
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case end:
		default:
			return nil, fmt.Errorf("python literal: expected , or %c at %d", end, p.i)
		}
	}
}

// str reads a quoted string with Python's escapes (\\ \' \" \n \r \t \xNN \uNNNN \UNNNNNNNN).
func (p *pyParser) str() (pyValue, error) {
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c != '\\':
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteRune(r)
			p.i += size
			continue
		}
		if p.i+1 >= len(p.s) {
			return nil, errPyEnd
		}
		esc := p.s[p.i+1]
		p.i += 2
		if simple, ok := map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'n': '\n', 'r': '\r', 't': '\t', '0': 0}[esc]; ok {
			b.WriteByte(simple)
			continue
		}
		width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[esc]
		if width == 0 || p.i+width > len(p.s) {
			return nil, fmt.Errorf("python literal: unsupported escape \\%c", esc)
		}
		code, err := strconv.ParseUint(p.s[p.i:p.i+width], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("python literal: bad escape \\%c%s", esc, p.s[p.i:p.i+width])
		}
		b.WriteRune(rune(code))
		p.i += width
	}
	return nil, errPyEnd
}
