package backup

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/compression"
	"github.com/plinth-dev/plinth/libs/storage/encryption"
	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// Format names the manifest's layout; a restore refuses formats it does not know.
const Format = "plinth-lvmd-backup/1"

// Manifest describes a stored backup. It sits beside the data as manifest.json and is
// written last, so a manifest means a whole backup.
type Manifest struct {
	Format string `json:"format"`
	// Backup, VolumeHandle, Node and DeviceClass say what was backed up.
	Backup       string `json:"backup"`
	VolumeHandle string `json:"volume_handle"`
	Node         string `json:"node"`
	DeviceClass  string `json:"device_class"`
	VolumeGroup  string `json:"volume_group"`
	// SizeBytes is the volume's size: the bytes a restore writes.
	SizeBytes uint64 `json:"size_bytes"`
	// Source says how the volume was read: "snapshot" or "physical-extents".
	Source     string `json:"source"`
	ExtentSize uint64 `json:"extent_size,omitempty"`
	// Extents is the volume's layout when read through its physical volumes.
	Extents []lvm.ExtentRange `json:"extents,omitempty"`
	// Data is the data object's key under the backup's path; DataBytes and DataSHA256
	// describe the object as stored (compressed, then encrypted).
	Data        string `json:"data"`
	DataBytes   int64  `json:"data_bytes"`
	DataSHA256  string `json:"data_sha256"`
	Compression string `json:"compression"`
	Encrypted   bool   `json:"encrypted"`
	KeyID       string `json:"key_id,omitempty"`
	// VolumeSHA256 is the SHA-256 of the volume's bytes. For an encrypted backup it is
	// sealed with the backup's key instead (SealedVolumeSHA256, base64 of the encryption
	// stream), so the manifest does not let anyone confirm guesses of the content.
	VolumeSHA256       string    `json:"volume_sha256,omitempty"`
	SealedVolumeSHA256 string    `json:"sealed_volume_sha256,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
}

// maxManifest bounds a manifest read from the object store (a real one is a few KiB).
const maxManifest = 1 << 20

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseManifest reads a manifest from untrusted bytes and checks it is one a restore can
// follow: known format and compression, a data key inside the backup's path, well-formed
// checksums.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifest {
		return nil, fmt.Errorf("manifest is %d bytes; at most %d are allowed", len(data), maxManifest)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest is not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("manifest has trailing data")
	}
	_, known := compressionOf(m.Compression)
	switch {
	case m.Format != Format:
		return nil, fmt.Errorf("manifest format %s is not %s (written by other software or a newer agent)", objectstore.Quote(m.Format), Format)
	case objectstore.ValidateKey(m.Data) != nil || m.Data == manifestKey:
		return nil, fmt.Errorf("manifest names data object %s, which is not a key under the backup", objectstore.Quote(m.Data))
	case !known:
		return nil, fmt.Errorf("manifest's compression %s is not one this agent reads", objectstore.Quote(m.Compression))
	case m.DataBytes < 0 || !sha256RE.MatchString(m.DataSHA256):
		return nil, errors.New("manifest's data size or checksum is malformed")
	case m.SizeBytes == 0 || m.SizeBytes > 1<<62:
		return nil, fmt.Errorf("manifest's volume size %d is not plausible", m.SizeBytes)
	case m.Encrypted && (m.KeyID == "" || m.SealedVolumeSHA256 == "" || m.VolumeSHA256 != ""):
		return nil, errors.New("encrypted backup's manifest lacks its key id or sealed checksum")
	case !m.Encrypted && !sha256RE.MatchString(m.VolumeSHA256):
		return nil, errors.New("manifest's volume checksum is malformed")
	}
	return &m, nil
}

// compressionOf reads a manifest's compression: every kind the storage library reads, so a
// backup written with any -compression this agent accepts restores.
func compressionOf(name string) (compression.Kind, bool) {
	k, err := compression.Parse(name)
	return k, err == nil && name != ""
}

// seal encrypts a checksum with the backup's key.
func seal(sum []byte, key *encryption.Key) (string, error) {
	var buf bytes.Buffer
	w, err := encryption.NewWriter(&buf, key)
	if err != nil {
		return "", err
	}
	if _, err := w.Write([]byte(hex.EncodeToString(sum))); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// volumeChecksum is the volume's SHA-256 (hex) the manifest vouches for, unsealed with key
// when the backup is encrypted.
func (m *Manifest) volumeChecksum(key *encryption.Key) (string, error) {
	if !m.Encrypted {
		return m.VolumeSHA256, nil
	}
	raw, err := base64.StdEncoding.DecodeString(m.SealedVolumeSHA256)
	if err != nil {
		return "", errors.New("manifest's sealed checksum is not base64")
	}
	r, _, err := encryption.NewReader(bytes.NewReader(raw), key)
	if err != nil {
		return "", err
	}
	sum, err := io.ReadAll(io.LimitReader(r, 128))
	if err != nil {
		return "", err
	}
	if !sha256RE.Match(sum) {
		return "", errors.New("manifest's sealed checksum is malformed")
	}
	return string(sum), nil
}
