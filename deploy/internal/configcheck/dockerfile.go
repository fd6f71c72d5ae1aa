package configcheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Dockerfile is what a Dockerfile declares, as BuildKit reads it.
type Dockerfile struct {
	// Stages in order; the last one is the image.
	Stages []instructions.Stage
	// Args are the build arguments any stage declares (`ARG NAME`).
	Args map[string]bool
	// Targets are the named stages that are images (no other stage builds on them or copies
	// from them), with whether they run as root; the last stage, the default image, is never
	// root.
	Targets map[string]bool
}

// ParseDockerfile parses src with BuildKit's own parser (the one `docker build` uses) and
// reports what BuildKit would refuse before building: syntax, instruction flags including every
// RUN --mount option, its lint rules. It also insists on what a Plinth image needs: every image
// stage (one no other stage uses) has an ENTRYPOINT and says which USER it runs as, and the
// last stage, the default image, runs as a user other than root.
func ParseDockerfile(src []byte) (*Dockerfile, error) {
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("dockerfile: %w", err)
	}
	var errs []error
	for _, w := range res.Warnings {
		var loc []parser.Range
		if w.Location != nil {
			loc = []parser.Range{*w.Location}
		}
		errs = append(errs, fmt.Errorf("dockerfile line %d: %s", line(loc), w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		errs = append(errs, fmt.Errorf("dockerfile line %d: %s: %s", line(loc), rule, msg))
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("dockerfile: %w", err))...)
	}
	if len(stages) == 0 {
		return nil, errors.New("dockerfile has no FROM")
	}
	d := &Dockerfile{Stages: stages, Args: map[string]bool{}, Targets: map[string]bool{}}
	used := map[string]bool{}
	// The mounts are parsed only when the command is expanded; identity expansion is enough to
	// check their options.
	keep := func(word string) (string, error) { return word, nil }
	for _, s := range stages {
		for _, c := range s.Commands {
			switch c := c.(type) {
			case *instructions.ArgCommand:
				for _, a := range c.Args {
					d.Args[a.Key] = true
				}
			case *instructions.CopyCommand:
				used[strings.ToLower(c.From)] = true
			case *instructions.RunCommand:
				if err := c.Expand(keep); err != nil {
					errs = append(errs, fmt.Errorf("dockerfile line %d: %w", line(c.Location()), err))
				}
			}
		}
	}
	for _, s := range stages {
		used[strings.ToLower(s.BaseName)] = true
	}
	for i, s := range stages {
		last := i == len(stages)-1
		if !last && (s.Name == "" || used[strings.ToLower(s.Name)]) {
			continue
		}
		root, stageErrs := checkImageStage(s, last)
		errs = append(errs, stageErrs...)
		if s.Name != "" {
			d.Targets[s.Name] = root
		}
	}
	return d, errors.Join(errs...)
}

// checkImageStage checks a stage that becomes an image, and reports whether it runs as root.
// Only the default (last) image must not: the others are for binaries that need root, and
// must say so with an explicit USER root.
func checkImageStage(s instructions.Stage, last bool) (root bool, errs []error) {
	var user string
	var entrypoint bool
	for _, c := range s.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = true
		}
	}
	name := "the image stage"
	if !last {
		name = "image stage " + s.Name
	}
	switch user {
	case "":
		errs = append(errs, fmt.Errorf("dockerfile: %s has no USER: it would run as root without saying so", name))
	case "root", "0", "root:root", "0:0":
		root = true
		if last {
			errs = append(errs, fmt.Errorf("dockerfile: %s runs as %s", name, user))
		}
	}
	if !entrypoint {
		errs = append(errs, fmt.Errorf("dockerfile: %s has no ENTRYPOINT", name))
	}
	return root, errs
}

// line is the first line of a location, 0 when there is none.
func line(loc []parser.Range) int {
	if len(loc) == 0 {
		return 0
	}
	return loc[0].Start.Line
}
