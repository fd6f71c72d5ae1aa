package maastest

import (
	"encoding/base64"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Files is the machine's last user data as cloud-init writes it: each write_files entry's
// path as a "# path" line, then its decoded content.
func (m Machine) Files() (string, error) {
	var cc struct {
		WriteFiles []struct {
			Path, Content string
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(m.UserData, &cc); err != nil {
		return "", fmt.Errorf("user data is not cloud-config YAML: %w", err)
	}
	var b strings.Builder
	for _, f := range cc.WriteFiles {
		data, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.Path, err)
		}
		b.WriteString("# " + f.Path + "\n")
		b.Write(data)
	}
	return b.String(), nil
}
