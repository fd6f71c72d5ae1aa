package service

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/server"
)

func TestUnixSocketIsPrivateAndRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugins", "grpc.sock") // parent dir does not exist yet
	h := start(t, opts{Options: server.Options{GRPCAddr: "unix://" + path}})
	if got := h.srv.Addr(); got != "unix://"+path {
		t.Errorf("Addr = %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want socket with 0600", fi.Mode())
	}
	if out, err := h.call(testCtx(t), "Echo", "over unix"); err != nil || out != "over unix" {
		t.Fatalf("call over unix socket = %q, %v", out, err)
	}
	if err := h.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still exists after shutdown: %v", err)
	}
}

func TestUnixSocketReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grpc.sock")
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false) // simulate a process that died
	_ = stale.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}

	h := start(t, opts{Options: server.Options{GRPCAddr: "unix://" + path}})
	if _, err := h.call(testCtx(t), "Echo", "x"); err != nil {
		t.Fatalf("call after replacing stale socket: %v", err)
	}
}

func TestUnixSocketRefusesToClobber(t *testing.T) {
	dir := t.TempDir()

	file := filepath.Join(dir, "data.sock")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := server.New(server.Options{Name: "t", GRPCAddr: "unix://" + file})
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("New over a regular file = %v, want a 'not a socket' error", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Error("regular file was modified")
	}

	live := filepath.Join(dir, "live.sock")
	other, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() { // accept the liveness probe
		if c, err := other.Accept(); err == nil {
			_ = c.Close()
		}
	}()
	_, err = server.New(server.Options{Name: "t", GRPCAddr: "unix://" + live})
	if err == nil || !strings.Contains(err.Error(), "served by another process") {
		t.Errorf("New over a live socket = %v, want an 'in use' error", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		g    server.Options
		want string
	}{
		{"no name", Options{}, server.Options{GRPCAddr: "127.0.0.1:0"}, "Name is required"},
		{"bad address", Options{Name: "t"}, server.Options{GRPCAddr: "localhost"}, "must be host:port or unix:///path"},
		{"relative socket", Options{Name: "t"}, server.Options{GRPCAddr: "unix://rel.sock"}, "absolute"},
		{"negative drain", Options{Name: "t", DrainDelay: -1}, server.Options{GRPCAddr: "127.0.0.1:0"}, "must not be negative"},
		{"admin in use", Options{Name: "t", Admin: config.Admin{AdminAddr: "bad"}}, server.Options{GRPCAddr: "127.0.0.1:0"}, "admin listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.o)
			if err == nil {
				_, err = s.GRPC(config.GRPC{GRPCAddr: tt.g.GRPCAddr}, tt.g)
				_ = s.Close(context.Background())
			}
			if err == nil {
				t.Fatalf("New and GRPC succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCloseReleasesListenersWithoutRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grpc.sock")
	s, err := New(Options{Name: "t", Admin: config.Admin{AdminAddr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GRPC(config.GRPC{GRPCAddr: "unix://" + path}, server.Options{}); err != nil {
		t.Fatal(err)
	}
	admin := s.AdminAddr()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket remains after Close: %v", err)
	}
	l, err := net.Listen("tcp", admin) // the admin port is free again
	if err != nil {
		t.Errorf("admin port not released: %v", err)
	} else {
		_ = l.Close()
	}
}
