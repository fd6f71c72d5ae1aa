package configcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// tiltBuiltins are stand-ins for the Tilt functions Plinth's Tiltfile calls. Each takes the
// parameters Tilt's own implementation unpacks (tilt-dev/tilt internal/tiltfile), records what
// CheckTiltResources needs and runs nothing.
type tiltBuiltins struct {
	root string
	env  map[string]string
	// local answers local(command): the machine the Tiltfile is read on, as the caller
	// describes it. A command it does not know fails the run.
	local     map[string]string
	resources []TiltResource
	// read lists the variables os.getenv asked for, in order (CheckTiltSettings).
	read []string
}

func (b *tiltBuiltins) predeclared() starlark.StringDict {
	path := &starlarkstruct.Module{Name: "os.path", Members: starlark.StringDict{
		"exists": starlark.NewBuiltin("os.path.exists", b.exists),
		"join":   starlark.NewBuiltin("os.path.join", join),
	}}
	return starlark.StringDict{
		"local_resource":  starlark.NewBuiltin("local_resource", b.localResource),
		"probe":           starlark.NewBuiltin("probe", probe),
		"http_get_action": starlark.NewBuiltin("http_get_action", httpGetAction),
		"exec_action":     starlark.NewBuiltin("exec_action", execAction),
		"link":            starlark.NewBuiltin("link", link),
		"local":           starlark.NewBuiltin("local", b.runLocal),
		"os": &starlarkstruct.Module{Name: "os", Members: starlark.StringDict{
			"getenv": starlark.NewBuiltin("os.getenv", b.getenv),
			"path":   path,
		}},
	}
}

func (b *tiltBuiltins) localResource(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var (
		name, cmdBat, serveCmdBat, dir, serveDir                              string
		autoInit, allowParallel                                               bool
		cmd, serveCmd, deps, triggerMode, resourceDeps, ignore, links, labels starlark.Value
		env, serveEnv                                                         *starlark.Dict
		readiness                                                             *starlarkstruct.Struct
	)
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs,
		"name", &name, "cmd?", &cmd, "deps?", &deps, "trigger_mode?", &triggerMode,
		"resource_deps?", &resourceDeps, "ignore?", &ignore, "auto_init?", &autoInit,
		"serve_cmd?", &serveCmd, "cmd_bat?", &cmdBat, "serve_cmd_bat?", &serveCmdBat,
		"allow_parallel?", &allowParallel, "links?", &links, "labels?", &labels,
		"env?", &env, "serve_env?", &serveEnv, "readiness_probe?", &readiness,
		"dir?", &dir, "serve_dir?", &serveDir); err != nil {
		return nil, err
	}
	r := TiltResource{Name: name}
	var err error
	if r.Cmd, err = command(fn.Name()+": cmd", cmd); err != nil {
		return nil, err
	}
	if r.ServeCmd, err = command(fn.Name()+": serve_cmd", serveCmd); err != nil {
		return nil, err
	}
	if r.Deps, err = stringList(fn.Name()+": deps", deps); err != nil {
		return nil, err
	}
	if r.ResourceDeps, err = stringList(fn.Name()+": resource_deps", resourceDeps); err != nil {
		return nil, err
	}
	if r.ServeEnv, err = stringMap(fn.Name()+": serve_env", serveEnv); err != nil {
		return nil, err
	}
	if readiness != nil {
		if r.Probe, err = httpProbe(readiness); err != nil {
			return nil, fmt.Errorf("%s: readiness_probe: %w", fn.Name(), err)
		}
	}
	b.resources = append(b.resources, r)
	return starlark.None, nil
}

func probe(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var initialDelay, timeout, period, success, failure int
	var exec, httpGet, tcpSocket starlark.Value = starlark.None, starlark.None, starlark.None
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs,
		"initial_delay_secs?", &initialDelay, "timeout_secs?", &timeout, "period_secs?", &period,
		"success_threshold?", &success, "failure_threshold?", &failure,
		"exec?", &exec, "http_get?", &httpGet, "tcp_socket?", &tcpSocket); err != nil {
		return nil, err
	}
	return starlarkstruct.FromStringDict(starlark.String("probe"), starlark.StringDict{"http_get": httpGet}), nil
}

func httpGetAction(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var port int
	host, scheme, path := "localhost", "http", ""
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "port", &port, "host?", &host, "scheme?", &scheme, "path?", &path); err != nil {
		return nil, err
	}
	return starlarkstruct.FromStringDict(starlark.String("http_get_action"), starlark.StringDict{
		"port": starlark.MakeInt(port), "host": starlark.String(host), "path": starlark.String(path),
	}), nil
}

func execAction(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var command *starlark.List
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "command", &command); err != nil {
		return nil, err
	}
	return starlarkstruct.FromStringDict(starlark.String("exec_action"), starlark.StringDict{"command": command}), nil
}

func link(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var url, name string
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "url", &url, "name?", &name); err != nil {
		return nil, err
	}
	return starlarkstruct.FromStringDict(starlark.String("link"), starlark.StringDict{"url": starlark.String(url)}), nil
}

// runLocal stands in for local(): Tilt runs the command with sh -c at load time and returns its
// output; here the answer comes from the machine description the caller gave.
func (b *tiltBuiltins) runLocal(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var (
		cmdValue, commandBat, dir, env, stdin starlark.Value
		quiet, echoOff                        bool
	)
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "command", &cmdValue, "quiet?", &quiet,
		"command_bat?", &commandBat, "echo_off?", &echoOff, "env?", &env, "dir?", &dir, "stdin?", &stdin); err != nil {
		return nil, err
	}
	cmd, err := command(fn.Name()+": command", cmdValue)
	if err != nil {
		return nil, err
	}
	out, ok := b.local[cmd]
	if !ok {
		return nil, fmt.Errorf("%s(%q): the check does not know what this command answers (add it to the machine description)", fn.Name(), cmd)
	}
	return starlark.String(out), nil
}

func (b *tiltBuiltins) getenv(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var key string
	var def starlark.Value = starlark.None
	if err := starlark.UnpackArgs(fn.Name(), args, kwargs, "key", &key, "default?", &def); err != nil {
		return nil, err
	}
	b.read = append(b.read, key)
	if v, ok := b.env[key]; ok {
		return starlark.String(v), nil
	}
	return def, nil
}

func (b *tiltBuiltins) exists(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var p string
	if err := starlark.UnpackPositionalArgs(fn.Name(), args, kwargs, 1, &p); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(b.root, p)
	}
	_, err := os.Stat(p)
	return starlark.Bool(err == nil), nil
}

func join(_ *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	parts, err := stringList(fn.Name(), args)
	if err != nil {
		return nil, err
	}
	return starlark.String(filepath.Join(parts...)), nil
}

// httpProbe reads the http_get action of a probe, nil when it probes another way.
func httpProbe(p *starlarkstruct.Struct) (*HTTPProbe, error) {
	hg, err := p.Attr("http_get")
	if err != nil || hg == starlark.None {
		return nil, err
	}
	s, ok := hg.(*starlarkstruct.Struct)
	if !ok || s.Constructor() != starlark.String("http_get_action") {
		return nil, fmt.Errorf("http_get is a %s, not an http_get_action()", hg.Type())
	}
	port, _ := s.Attr("port")
	host, _ := s.Attr("host")
	path, _ := s.Attr("path")
	n, _ := starlark.AsInt32(port)
	return &HTTPProbe{Host: string(host.(starlark.String)), Port: n, Path: string(path.(starlark.String))}, nil
}

// stringList accepts what Tilt accepts for a list of paths or names: a string or a sequence
// of strings.
func stringList(what string, v starlark.Value) ([]string, error) {
	switch v := v.(type) {
	case nil, starlark.NoneType:
		return nil, nil
	case starlark.String:
		return []string{string(v)}, nil
	case starlark.Iterable:
		var out []string
		it := v.Iterate()
		defer it.Done()
		var x starlark.Value
		for it.Next(&x) {
			s, ok := x.(starlark.String)
			if !ok {
				return nil, fmt.Errorf("%s: %s is not a string", what, x)
			}
			out = append(out, string(s))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want a string or a list of strings, got %s", what, v.Type())
}

// command is Tilt's cmd or serve_cmd: a shell command string, or an argv list run without a
// shell, as a string (words joined by spaces) for CheckTiltResources.
func command(what string, v starlark.Value) (string, error) {
	if s, ok := v.(starlark.String); ok {
		return string(s), nil
	}
	if _, ok := v.(*starlark.List); !ok && v != nil && v != starlark.None {
		return "", fmt.Errorf("%s: want a string or a list of strings, got %s", what, v.Type())
	}
	argv, err := stringList(what, v)
	return strings.Join(argv, " "), err
}

// stringMap is Tilt's StringStringMap: both keys and values must be strings.
func stringMap(what string, d *starlark.Dict) (map[string]string, error) {
	out := map[string]string{}
	if d == nil {
		return out, nil
	}
	for _, kv := range d.Items() {
		k, ok1 := kv[0].(starlark.String)
		v, ok2 := kv[1].(starlark.String)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: %s=%s: keys and values must be strings", what, kv[0], kv[1])
		}
		out[string(k)] = string(v)
	}
	return out, nil
}
