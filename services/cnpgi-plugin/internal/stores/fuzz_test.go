package stores_test

import (
	"testing"

	"github.com/plinth-dev/plinth/services/cnpgi-plugin/internal/stores"
)

// FuzzParseFile: the store configuration file is parsed at start; whatever it holds, the
// parser returns a file that validates, or an error — never a panic.
func FuzzParseFile(f *testing.F) {
	for _, seed := range []string{
		"defaultStore: main\nstores:\n  main:\n    prefix: pg\n    s3:\n      endpoint: https://s3.example.com\n      bucket: b\n      accessKeyId: {env: A}\n      secretAccessKey: {file: /run/s}\n    wal: {compression: lz4, maxParallel: 4}\n    encryption: {key: {env: K}, previousKeys: [{file: /k}]}\n",
		"stores:\n  local:\n    posix: {path: /var/lib/x, noSync: true}\n",
		`{"stores": {"a": {"posix": {"path": "/x"}, "wal": {"compression": "zstd"}}}}`,
		"stores:\n  a:\n    posix: {path: rel}\n    s3: {bucket: b}\n",
		"stores: [1, 2]\n", "&a [*a]", "stores:\n  a: !!binary AAAA\n", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := stores.ParseFile(data)
		if err != nil {
			return
		}
		if err := file.Validate(); err != nil {
			t.Fatalf("ParseFile accepted a file that does not validate: %v", err)
		}
	})
}
