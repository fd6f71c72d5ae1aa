package grpc

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	"github.com/plinth-dev/plinth/libs/platform/input"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/backup"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// Limits on client strings, checked before anything else sees them.
const (
	maxTags          = 64
	maxURL           = 512
	maxPath          = 5 + 255 + 1 + objectstore.MaxKeyLen // s3:// bucket / prefix
	maxCredLen       = 1024
	maxTokenLen      = 8 << 10
	maxKeyLen        = 256
	maxGB            = 1 << 32 // 4 EiB: sizes stay far from uint64 and bigint overflow
	fieldName        = "name"
	fieldClass       = "device_class"
	fieldSize        = "size_gb"
	fieldSizeBytes   = "size_bytes"
	fieldOptionClass = "lvcreate_option_class"
	fieldS3          = "data_source.s3"
	fieldSource      = "source_volume"
	fieldAccessType  = "access_type"
)

// accessType is CreateLVSnapshot's access_type: "ro" (read-only) or "rw".
func accessType(v string) (readOnly bool, err error) {
	switch v {
	case "ro":
		return true, nil
	case "rw":
		return false, nil
	}
	return false, input.Invalid(fieldAccessType, "must be \"ro\" or \"rw\", not %s", input.Quote(input.Truncate(v, 32)))
}

// lvName checks a volume name from a request.
func lvName(field, v string) error {
	if err := input.String(field, v, volume.MaxNameLen); err != nil {
		return err
	}
	if err := volume.ValidateName(v); err != nil {
		return input.Invalid(field, "%s", err.Error())
	}
	return nil
}

// className checks a device class name's size and encoding; an unknown class is NotFound
// later, as in lvmd.
func className(v string) error { return input.String(fieldClass, v, deviceclass.MaxNameLen) }

func tags(vs []string) error {
	if err := input.Strings("tags", vs, volume.MaxTagLen, maxTags); err != nil {
		return err
	}
	for i, t := range vs {
		if err := volume.ValidateTag(t); err != nil {
			return input.Invalid("tags["+strconv.Itoa(i)+"]", "%s", err.Error())
		}
	}
	return nil
}

// sizeOf is a request's size in bytes from size_gb (the fork, TopoLVM up to v0.36.4) and
// size_bytes (TopoLVM v0.23 and later). With both, as TopoLVM v0.23 to v0.36.4 send them,
// size_gb must be size_bytes in whole GiB, rounded down (as they send it) or up; size_bytes
// is the size. allowZero admits a zero size_gb (ResizeLV's: grow to nothing is a no-op).
func sizeOf(gb uint64, b int64, allowZero bool) (uint64, error) {
	if b == 0 {
		return gib(gb, allowZero)
	}
	const maxBytes = maxGB << 30
	switch {
	case b < 0:
		return 0, input.Invalid(fieldSizeBytes, "must be positive, not %d", b)
	case uint64(b) > maxBytes:
		return 0, input.Invalid(fieldSizeBytes, "%d is more than the %d bytes any volume group can hold", b, uint64(maxBytes))
	}
	size := uint64(b)
	if gb != 0 && gb != size>>30 && gb != (size+1<<30-1)>>30 {
		return 0, input.Invalid(fieldSize+", "+fieldSizeBytes, "disagree: size_gb=%d is not size_bytes=%d in whole GiB (%d rounded down, %d up); send size_bytes alone",
			gb, size, size>>30, (size+1<<30-1)>>30)
	}
	return size, nil
}

// gib turns a size_gb into bytes; lvmd sizes are whole GiB.
func gib(v uint64, allowZero bool) (uint64, error) {
	switch {
	case v == 0 && !allowZero:
		return 0, input.Invalid(fieldSize, "must be at least 1 (or send size_bytes)")
	case v > maxGB:
		return 0, input.Invalid(fieldSize, "%d GiB is more than the %d GiB any volume group can hold", v, uint64(maxGB))
	}
	return v << 30, nil
}

// awsRegionRE finds the region in an AWS endpoint (s3.eu-west-1.amazonaws.com): the
// message has no region field, and AWS refuses requests signed for another one.
var awsRegionRE = regexp.MustCompile(`^s3[.-]([a-z0-9-]+)\.amazonaws\.com$`)

// toTarget validates a DataSource.S3 and turns it into a backup target. Messages name the
// field and never quote a credential, a key or a proxy URL (which may hold a password).
func toTarget(field string, s *lvmdpb.DataSource_S3) (backup.Target, error) {
	if s == nil {
		return backup.Target{}, input.Invalid(field, "is required: the agent reads and writes backups in S3")
	}
	if err := input.Required(field+".path", s.GetPath(), maxPath); err != nil {
		return backup.Target{}, err
	}
	bucket, prefix, err := objectstore.ParseLocation(s.GetPath())
	if err != nil {
		return backup.Target{}, input.Invalid(field+".path", "%s", err.Error())
	}
	if prefix == "" {
		return backup.Target{}, input.Invalid(field+".path", "must name the backup's own prefix in the bucket (bucket/path/to/backup)")
	}
	endpoint, region, err := endpointOf(field+".endpoint", s.GetEndpoint())
	if err != nil {
		return backup.Target{}, err
	}
	for _, p := range []struct{ field, v string }{{".http_proxy", s.GetHttpProxy()}, {".https_proxy", s.GetHttpsProxy()}} {
		if err := proxyURL(field+p.field, p.v); err != nil {
			return backup.Target{}, err
		}
	}
	for _, c := range []struct {
		field, v string
		max      int
		required bool
	}{
		{".access_key_id", s.GetAccessKeyId(), maxCredLen, true},
		{".secret_access_key", s.GetSecretAccessKey(), maxCredLen, true},
		{".session_token", s.GetSessionToken(), maxTokenLen, false},
		{".encryption_key", s.GetEncryptionKey(), maxKeyLen, false},
	} {
		if c.required && c.v == "" {
			return backup.Target{}, input.Invalid(field+c.field, "is required")
		}
		if err := input.String(field+c.field, c.v, c.max); err != nil {
			return backup.Target{}, err
		}
	}
	t := backup.Target{S3: objectstore.S3Options{
		Endpoint: endpoint, Bucket: bucket, Prefix: prefix, Region: region, PathStyle: endpoint != "",
		InsecureSkipVerify: !s.GetVerifyTls(), HTTPProxy: s.GetHttpProxy(), HTTPSProxy: s.GetHttpsProxy(),
		AccessKeyID: s.GetAccessKeyId(), SecretAccessKey: s.GetSecretAccessKey(), SessionToken: s.GetSessionToken(),
	}}
	if k := s.GetEncryptionKey(); k != "" {
		if t.Key, err = encryption.ParseKey(k); err != nil {
			return backup.Target{}, input.Invalid(field+".encryption_key", "must be 32 bytes, base64 or raw (generate one with: openssl rand -base64 32)")
		}
	}
	shown := endpoint
	if shown == "" {
		shown = "https://s3.amazonaws.com"
	}
	t.Location = strings.TrimSuffix(shown, "/") + "/" + bucket + "/" + prefix
	return t, nil
}

// endpointOf checks the endpoint URL: http(s), a host, no credentials, query or fragment.
func endpointOf(field, v string) (endpoint, region string, err error) {
	if err := input.String(field, v, maxURL); err != nil || v == "" {
		return "", "", err
	}
	u, perr := url.Parse(v)
	switch {
	case perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return "", "", input.Invalid(field, "must be an http:// or https:// URL with a host, e.g. https://s3.example.com")
	case u.User != nil:
		return "", "", input.Invalid(field, "must not carry credentials; use access_key_id and secret_access_key")
	case u.RawQuery != "" || u.Fragment != "":
		return "", "", input.Invalid(field, "must not have a query or fragment")
	}
	if m := awsRegionRE.FindStringSubmatch(u.Hostname()); m != nil {
		region = m[1]
	}
	return v, region, nil
}

// proxyURL checks a proxy URL without ever quoting it: it may hold a password.
func proxyURL(field, v string) error {
	if err := input.String(field, v, maxURL); err != nil || v == "" {
		return err
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") {
		return input.Invalid(field, "must be an http://, https:// or socks5:// URL with a host")
	}
	return nil
}

// backupName checks a backup's name (CreateBackup's backup.name): like every other name of
// the suite, letters, digits and - _ . + (not first: - or .), at most 255 bytes — never a
// path (it goes into events, manifests and the console's lists).
func backupName(field, v string) error {
	if err := input.Required(field, v, input.MaxName); err != nil {
		return err
	}
	if v[0] == '-' || v[0] == '.' {
		return input.Invalid(field, "must start with a letter, a digit, '_' or '+', not %s", input.Quote(input.Truncate(v, 32)))
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '+') {
			return input.Invalid(field, "may only contain letters, digits and - _ . + (byte %d of %s is %q)", i, input.Quote(input.Truncate(v, 32)), rune(c))
		}
	}
	return nil
}
