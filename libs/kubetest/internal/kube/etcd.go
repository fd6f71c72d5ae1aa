package kube

import (
	"errors"
	"os/exec"
)

// Etcd is the etcd binary: on PATH, or where Debian's etcd-server puts it (/usr/bin/etcd).
func Etcd() (string, error) {
	if path, err := exec.LookPath("etcd"); err == nil {
		return path, nil
	}
	if path, err := exec.LookPath("/usr/bin/etcd"); err == nil {
		return path, nil
	}
	return "", errors.New("etcd not found")
}
