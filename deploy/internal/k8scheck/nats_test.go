package k8scheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/plinth-dev/plinth/libs/platform/events"
)

// Every container with PLINTH_NATS_URL connects as a service user of events.Suite (the
// table deploy/k8s/nats/plinth-users.conf is generated from), with its password file in a
// read-only volume holding only that user's key of the Secret plinth-nats.
func TestNATSUsersMatchTheSuite(t *testing.T) {
	s := decode(t, build(t, kustomizations[0]))
	checked := 0
	for _, w := range s.Workloads {
		spec := w.Template.Spec
		for _, c := range spec.Containers {
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			if _, ok := env["PLINTH_NATS_URL"]; !ok {
				continue
			}
			checked++
			user := env["PLINTH_NATS_USER"].Value
			if _, ok := events.AccessOf(user); !ok || user == events.AdminUser {
				t.Errorf("%s: PLINTH_NATS_USER %q is not a service user of events.Suite", w, user)
				continue
			}
			file := env["PLINTH_NATS_PASSWORD_FILE"].Value
			var mount *corev1.VolumeMount
			for i, m := range c.VolumeMounts {
				if strings.HasPrefix(file, m.MountPath+"/") {
					mount = &c.VolumeMounts[i]
				}
			}
			if mount == nil || !mount.ReadOnly {
				t.Errorf("%s: PLINTH_NATS_PASSWORD_FILE %q is not in a read-only mount", w, file)
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name != mount.Name {
					continue
				}
				sec := v.Secret
				if sec == nil || sec.SecretName != "plinth-nats" || len(sec.Items) != 1 ||
					sec.Items[0].Key != user+"-password" || mount.MountPath+"/"+sec.Items[0].Path != file {
					t.Errorf("%s: volume %s must hold only key %s-password of Secret plinth-nats at %s: %+v", w, v.Name, user, file, v.VolumeSource)
				}
			}
		}
	}
	if checked < 6 {
		t.Errorf("checked %d NATS clients, want the 6 services", checked)
	}
}
