package provider

import (
	"fmt"
	"slices"
)

// Set is the providers a runner has, by name.
type Set struct {
	byName map[string]Provider
	names  []string
}

// NewSet returns a Set of ps; two providers with one name are an error.
func NewSet(ps ...Provider) (*Set, error) {
	s := &Set{byName: map[string]Provider{}}
	for _, p := range ps {
		if _, dup := s.byName[p.Name()]; dup {
			return nil, fmt.Errorf("provider %q is registered twice", p.Name())
		}
		s.byName[p.Name()] = p
		s.names = append(s.names, p.Name())
	}
	slices.Sort(s.names)
	return s, nil
}

// Get returns the provider called name.
func (s *Set) Get(name string) (Provider, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// Names lists the providers' names in order.
func (s *Set) Names() []string { return slices.Clone(s.names) }
