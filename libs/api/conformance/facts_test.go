package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// apiFacts is the upstream wire contract of one API, as stored in
// testdata/<api>.json. The JSON is decoded strictly so that a change of its
// schema is noticed instead of silently checking less.
type apiFacts struct {
	API      string        `json:"api"`
	Title    string        `json:"title"`
	Sources  []string      `json:"sources"`
	Remarks  []string      `json:"remarks"`
	Packages []string      `json:"packages"`
	Files    []fileFact    `json:"files"`
	Services []serviceFact `json:"services"`
	Messages []messageFact `json:"messages"`
	Enums    []enumFact    `json:"enums"`

	// later is the contract of a later upstream version our packages also speak (see
	// successors), or nil: what it has, with the same shape, our packages may add.
	later *apiFacts
}

// fileFact is one upstream .proto file and the package it declares.
type fileFact struct {
	Path    string `json:"path"`
	Package string `json:"package"`
	Syntax  string `json:"syntax"`
}

// serviceFact is a gRPC service by its full name.
type serviceFact struct {
	Name    string       `json:"name"`
	File    string       `json:"file"`
	Methods []methodFact `json:"methods"`
}

// methodFact is one RPC; Input and Output are message full names.
type methodFact struct {
	Name            string `json:"name"`
	Input           string `json:"input"`
	Output          string `json:"output"`
	ClientStreaming bool   `json:"client_streaming"`
	ServerStreaming bool   `json:"server_streaming"`
}

// messageFact is a message by its full name. Map entries are not listed;
// the map field describes them.
type messageFact struct {
	Name      string      `json:"name"`
	File      string      `json:"file"`
	Reachable bool        `json:"reachable"`
	Fields    []fieldFact `json:"fields"`
}

// fieldFact is everything about a field that decides how peers encode it
// (binary and JSON). The same shape is extracted from our descriptors, so
// comparing two fieldFacts compares the wire contracts.
type fieldFact struct {
	Name           string `json:"name"`
	Number         int32  `json:"number"`
	Kind           string `json:"kind"`
	Type           string `json:"type,omitempty"`
	Cardinality    string `json:"cardinality"`
	Proto3Optional bool   `json:"proto3_optional"`
	Presence       string `json:"presence"`
	Oneof          string `json:"oneof"`
	Map            bool   `json:"map"`
	MapKey         string `json:"map_key,omitempty"`
	MapValueKind   string `json:"map_value_kind,omitempty"`
	MapValueType   string `json:"map_value_type,omitempty"`
	JSONName       string `json:"json_name"`
}

// enumFact is an enum by its full name.
type enumFact struct {
	Name      string      `json:"name"`
	File      string      `json:"file"`
	Reachable bool        `json:"reachable"`
	Values    []valueFact `json:"values"`
}

// valueFact is one enum value.
type valueFact struct {
	Name   string `json:"name"`
	Number int32  `json:"number"`
}

// loadFacts reads testdata/<api>.json.
func loadFacts(api string) (*apiFacts, error) {
	path := filepath.Join("testdata", api+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the wire facts of %s: %w", api, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f apiFacts
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode %s (has the facts schema changed?): %w", path, err)
	}
	if f.API != api || len(f.Services) == 0 {
		return nil, fmt.Errorf("%s: want api %q with services, got api %q with %d services", path, api, f.API, len(f.Services))
	}
	if f.later, err = laterFacts(api); err != nil {
		return nil, err
	}
	return &f, nil
}

// packageOf returns the proto package the facts give for an upstream file.
func (f *apiFacts) packageOf(file string) (string, bool) {
	for _, ff := range f.Files {
		if ff.Path == file {
			return ff.Package, true
		}
	}
	return "", false
}

// message returns the facts of a message by full name.
func (f *apiFacts) message(name string) (messageFact, bool) {
	for _, m := range f.Messages {
		if m.Name == name {
			return m, true
		}
	}
	return messageFact{}, false
}

// laterHasField says whether the later contract has message's field with exactly this shape.
func (f *apiFacts) laterHasField(message string, got fieldFact) bool {
	if f.later == nil {
		return false
	}
	m, ok := f.later.message(message)
	return ok && slices.Contains(m.Fields, got)
}

// laterHasMethod says whether the later contract has service's method with exactly this shape.
func (f *apiFacts) laterHasMethod(service string, got methodFact) bool {
	if f.later == nil {
		return false
	}
	for _, s := range f.later.Services {
		if s.Name == service {
			return slices.Contains(s.Methods, got)
		}
	}
	return false
}

// items counts the facts: services, methods, messages, fields, enums and
// enum values.
func (f *apiFacts) items() int {
	n := 0
	for _, s := range f.Services {
		n += 1 + len(s.Methods)
	}
	for _, m := range f.Messages {
		n += 1 + len(m.Fields)
	}
	for _, e := range f.Enums {
		n += 1 + len(e.Values)
	}
	return n
}
