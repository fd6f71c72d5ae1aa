package configcheck

import (
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

const dockerFile = "deploy/docker/Dockerfile"

func TestDockerfileIsValid(t *testing.T) {
	d, err := ParseDockerfile(readRepoFile(t, dockerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"SERVICE", "BINARY"} {
		if !d.Args[arg] {
			t.Errorf("no ARG %s", arg)
		}
	}
	// The Go image must be able to build the workspace: its minor release is go.work's.
	goVersion := ""
	for _, l := range strings.Split(string(readRepoFile(t, "go.work")), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goVersion = strings.Join(strings.SplitN(v, ".", 3)[:2], ".")
		}
	}
	if build := d.Stages[0].BaseName; goVersion == "" || !strings.HasPrefix(build, "golang:"+goVersion) {
		t.Errorf("build stage FROM %s; go.work needs Go %s", build, goVersion)
	}
	image := d.Stages[len(d.Stages)-1]
	if !strings.HasPrefix(image.BaseName, "gcr.io/distroless/static") {
		t.Errorf("image stage FROM %s, want a distroless static base", image.BaseName)
	}
	var copied []string
	for _, c := range image.Commands {
		if cp, ok := c.(*instructions.CopyCommand); ok {
			copied = append(copied, cp.DestPath)
		}
	}
	for target, root := range map[string]bool{"lvm": true, "netns": true, "init": false} {
		if got, ok := d.Targets[target]; !ok || got != root {
			t.Errorf("target %s: present %v, root %v; want root %v", target, ok, got, root)
		}
	}
	for _, intermediate := range []string{"build", "tools", "debian-tools"} {
		if _, ok := d.Targets[intermediate]; ok {
			t.Errorf("%s is an intermediate stage, not an image", intermediate)
		}
	}
	// compose's health checks run wget inside the image.
	if !strings.Contains(strings.Join(copied, " "), "/usr/local/bin/wget") {
		t.Errorf("the image has no wget for health checks (copied: %v)", copied)
	}
}

// TestDockerfileRejects proves the checks bite: each broken copy must be refused.
func TestDockerfileRejects(t *testing.T) {
	src := readRepoFile(t, dockerFile)
	for _, tc := range []struct{ name, old, new, want string }{
		{"bad mount option", "target=/src,rw", "target=/src,rw,bogus=1", "unexpected key 'bogus'"},
		{"runs as root", "is 65532).\nUSER 65532:65532", "is 65532).\nUSER root", "the image stage runs as root"},
		{"no USER", "is 65532).\nUSER 65532:65532\n", "is 65532).\n", "no USER"},
		{"a root target that does not say so", "USER root\nENTRYPOINT", "ENTRYPOINT", "image stage lvm has no USER"},
		{"no ENTRYPOINT", "ENTRYPOINT [", "CMD [", "no ENTRYPOINT"},
		{"unknown instruction", "ENTRYPOINT [", "ENTRYPIONT [", "unknown instruction"},
		{"lint rule", "AS build", "as build", "FromAsCasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDockerfile(mutate(t, src, tc.old, tc.new))
			wantErr(t, err, tc.want)
		})
	}
}
