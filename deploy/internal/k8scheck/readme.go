package k8scheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// SecretsHeading is the README section whose table documents the Secrets a user creates.
const SecretsHeading = "## Secrets you create"

var backticked = regexp.MustCompile("`([^`]+)`")

// ParseDocumented reads the table under SecretsHeading in deploy/k8s/README.md: each row's
// first cell is a Secret's name in backticks, its second cell the keys in backticks ("—" for
// a Secret used whole). The section ends at the next heading.
func ParseDocumented(readme []byte) (Documented, error) {
	doc := Documented{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			in = line == SecretsHeading
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.Trim(cells[0], " -:") == "" {
			continue // the separator row
		}
		names := backticked.FindAllStringSubmatch(cells[0], -1)
		if len(names) == 0 {
			if strings.TrimSpace(cells[0]) == "Secret" {
				continue // the header row
			}
			return nil, fmt.Errorf("README.md:%d: first cell %q names no Secret in backticks", n, strings.TrimSpace(cells[0]))
		}
		if len(names) != 1 {
			return nil, fmt.Errorf("README.md:%d: first cell names %d Secrets, want one", n, len(names))
		}
		name := names[0][1]
		if doc[name] == nil {
			doc[name] = map[string]bool{}
		}
		for _, k := range backticked.FindAllStringSubmatch(cells[1], -1) {
			doc[name][k[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(doc) == 0 {
		return nil, fmt.Errorf("README.md has no table of Secrets under %q", SecretsHeading)
	}
	return doc, nil
}
