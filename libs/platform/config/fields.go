package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

var durationType = reflect.TypeFor[time.Duration]()

// field is one configurable struct field and the names it is declared under.
type field struct {
	path   string // Go path for programmer errors, e.g. "Common.GRPCAddr"
	env    string
	flag   string
	usage  string
	def    string // default tag, applied only when the field is zero before Load
	secret string // "", "true" or "url"
	// renamed are the names the setting had before (the renamed tag, comma separated): Load
	// refuses them, naming env, so an upgrade that still sets one fails instead of running
	// on a default.
	renamed []string
	v       reflect.Value
}

// fieldsOf walks dst (a pointer to a struct) and returns every field tagged with env or flag,
// descending into untagged struct fields such as an embedded Common.
func fieldsOf(dst any) ([]*field, error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: need a non-nil pointer to a struct, got %T", dst)
	}
	var out []*field
	if err := collect(rv.Elem(), "", &out); err != nil {
		return nil, err
	}
	envs, flags := map[string]string{}, map[string]string{}
	for _, f := range out {
		for _, name := range append([]string{f.env}, f.renamed...) {
			if prev, dup := envs[name]; dup && name != "" {
				return nil, fmt.Errorf("config: %s and %s both use env %s (as a name or a former name)", prev, f.path, name)
			}
			envs[name] = f.path
		}
		if prev, dup := flags[f.flag]; dup && f.flag != "" {
			return nil, fmt.Errorf("config: %s and %s both use flag -%s", prev, f.path, f.flag)
		}
		flags[f.flag] = f.path
	}
	return out, nil
}

func collect(v reflect.Value, prefix string, out *[]*field) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		path := prefix + sf.Name
		env, hasEnv := sf.Tag.Lookup("env")
		flg, hasFlag := sf.Tag.Lookup("flag")
		if !hasEnv && !hasFlag {
			if sf.Type.Kind() == reflect.Struct {
				if err := collect(v.Field(i), path+".", out); err != nil {
					return err
				}
			}
			continue
		}
		if env == "" && flg == "" {
			return fmt.Errorf("config: field %s has empty env and flag tags", path)
		}
		if !supported(sf.Type) {
			return fmt.Errorf("config: field %s has type %s; supported: string, int, bool, time.Duration, []string", path, sf.Type)
		}
		secret := sf.Tag.Get("secret")
		if secret != "" && secret != "true" && secret != "url" {
			return fmt.Errorf(`config: field %s: secret tag must be "true" or "url", got %q`, path, secret)
		}
		renamed := splitList(sf.Tag.Get("renamed"))
		if len(renamed) > 0 && env == "" {
			return fmt.Errorf("config: field %s has a renamed tag but no env tag", path)
		}
		*out = append(*out, &field{
			path: path, env: env, flag: flg, usage: sf.Tag.Get("usage"),
			def: sf.Tag.Get("default"), secret: secret, renamed: renamed, v: v.Field(i),
		})
	}
	return nil
}

func supported(t reflect.Type) bool {
	if t == durationType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	default:
		return false
	}
}

// set parses s into the field according to its type.
func (f *field) set(s string) error {
	v := f.v
	switch {
	case v.Type() == durationType:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("invalid duration %q (use Go syntax such as 500ms, 15s, 2m)", s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("invalid boolean %q (use true or false)", s)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("invalid integer %q", s)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Slice:
		v.Set(reflect.ValueOf(splitList(s)).Convert(v.Type()))
	}
	return nil
}

// splitList splits a comma-separated list, trimming spaces and dropping empty items so that
// "a, b," means [a b].
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// String formats the field's current value the way it would be written in env or a flag.
func (f *field) String() string {
	v := f.v
	switch {
	case v.Type() == durationType:
		return time.Duration(v.Int()).String()
	case v.Kind() == reflect.Slice:
		return strings.Join(v.Convert(reflect.TypeFor[[]string]()).Interface().([]string), ",")
	default:
		return fmt.Sprint(v.Interface())
	}
}
