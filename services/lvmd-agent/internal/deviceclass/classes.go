package deviceclass

import (
	"errors"
	"fmt"
)

// ErrNotFound: no device class of that name.
var ErrNotFound = errors.New("device class not found")

// Classes looks classes up by name; the empty name is the default class (lvmd's rule for
// requests that name none).
type Classes struct {
	all     []*DeviceClass
	byName  map[string]*DeviceClass
	def     *DeviceClass
	options map[string]*OptionClass
}

// New indexes a validated file's classes.
func New(f *File) (*Classes, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	c := &Classes{all: f.DeviceClasses, byName: map[string]*DeviceClass{}, options: map[string]*OptionClass{}}
	for _, oc := range f.OptionClasses {
		c.options[oc.Name] = oc
	}
	for _, dc := range f.DeviceClasses {
		c.byName[dc.Name] = dc
		if dc.Default {
			c.def = dc
		}
	}
	return c, nil
}

// Get returns the class called name, or the default class for "".
func (c *Classes) Get(name string) (*DeviceClass, error) {
	if name == "" {
		return c.def, nil
	}
	if dc, ok := c.byName[name]; ok {
		return dc, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, clip(name))
}

// Default is the default class.
func (c *Classes) Default() *DeviceClass { return c.def }

// All lists the classes in file order.
func (c *Classes) All() []*DeviceClass { return c.all }

// OptionClass returns the lvcreate option class called name (ok false: there is none).
func (c *Classes) OptionClass(name string) (oc *OptionClass, ok bool) {
	oc, ok = c.options[name]
	return oc, ok
}
