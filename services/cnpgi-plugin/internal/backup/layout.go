package backup

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/storage/compression"
)

// The barman-cloud layout of base backups in a store, next to the WAL archive:
//
//	<server>/base/<backup id>/backup.info
//	<server>/base/<backup id>/data.tar[.gz|.zst|.snappy|…]  PGDATA (plus data_0001.tar... when split)
//	<server>/base/<backup id>/<tablespace oid>.tar[.gz|...] each user tablespace

// idRE is barman's backup id: the start time, YYYYMMDDTHHMMSS.
var idRE = regexp.MustCompile(`^\d{8}T\d{6}$`)

// IsID reports whether s has the form of a backup id.
func IsID(s string) bool { return idRE.MatchString(s) }

// idLayout formats a backup id from a time.
const idLayout = "20060102T150405"

// NewID is the backup id for a backup started at t.
func NewID(t time.Time) string { return t.UTC().Format(idLayout) }

// BaseDir is the key prefix of all base backups of server.
func BaseDir(server string) string { return server + "/base/" }

// Dir is the key prefix of one backup's objects.
func Dir(server, id string) string { return BaseDir(server) + id + "/" }

// InfoKey is the key of a backup's backup.info.
func InfoKey(server, id string) string { return Dir(server, id) + "backup.info" }

// archiveKey is the key of the tar named base ("data" or a tablespace oid) with compression c.
func archiveKey(server, id, base string, c Compression) string {
	return Dir(server, id) + base + ".tar" + c.Ext()
}

// Archive is one tar object of a backup.
type Archive struct {
	// Key is the object key.
	Key string
	// Base is "data" for PGDATA, or the tablespace oid.
	Base string
	// Part orders the pieces of a split archive (data.tar is 0, data_0001.tar is 1).
	Part        int
	Compression Compression
	Size        int64
}

var archiveRE = regexp.MustCompile(`^([0-9]+|data)(?:_([0-9]{4}))?\.tar(\.[a-z0-9]+)?$`)

// parseArchive recognises a backup's tar objects among the keys under its directory.
func parseArchive(dir, key string, size int64) (Archive, bool) {
	name, ok := strings.CutPrefix(key, dir)
	if !ok || strings.Contains(name, "/") {
		return Archive{}, false
	}
	m := archiveRE.FindStringSubmatch(name)
	if m == nil {
		return Archive{}, false
	}
	a := Archive{Key: key, Base: m[1], Size: size}
	if m[2] != "" {
		a.Part, _ = strconv.Atoi(m[2])
	}
	c, known := compression.OfSuffix(m[3])
	if !known {
		return Archive{}, false
	}
	a.Compression = c
	return a, true
}

// idOfKey returns the backup id of a key under BaseDir(server), or "".
func idOfKey(server, key string) string {
	rest, ok := strings.CutPrefix(key, BaseDir(server))
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	if !IsID(id) {
		return ""
	}
	return id
}
