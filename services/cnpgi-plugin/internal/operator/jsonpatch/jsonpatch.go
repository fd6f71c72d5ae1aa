// Package jsonpatch builds RFC 6902 JSON Patch documents, the form CloudNativePG applies to
// the objects a plugin mutates (Cluster defaults, Pods and Jobs with the sidecar).
package jsonpatch

import (
	"encoding/json"
	"strings"
)

// Op is one patch operation.
type Op struct {
	// Op is "add", "replace", "remove" or "test".
	Op string `json:"op"`
	// Path is a JSON Pointer (RFC 6901).
	Path string `json:"path"`
	// Value is the new value for add, replace and test.
	Value any `json:"value,omitempty"`
}

// Patch is a list of operations applied in order.
type Patch []Op

// Add appends an "add" of value at path.
func (p *Patch) Add(path string, value any) { *p = append(*p, Op{Op: "add", Path: path, Value: value}) }

// Replace appends a "replace" of the value at path.
func (p *Patch) Replace(path string, value any) {
	*p = append(*p, Op{Op: "replace", Path: path, Value: value})
}

// Marshal encodes the patch; an empty patch encodes to nil, which CloudNativePG reads as
// "no change".
func (p Patch) Marshal() ([]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	return json.Marshal(p)
}

// Pointer joins reference tokens into a JSON Pointer, escaping "~" and "/" (RFC 6901 §3):
// Pointer("metadata", "annotations", "cnpg.io/x") is "/metadata/annotations/cnpg.io~1x".
// Array indexes are tokens too: Pointer("spec", "plugins", strconv.Itoa(i)).
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escaper.Replace(t))
	}
	return b.String()
}

var escaper = strings.NewReplacer("~", "~0", "/", "~1")
