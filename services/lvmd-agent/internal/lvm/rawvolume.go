package lvm

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// RawVolume reads and writes an inactive logical volume straight on its physical volumes,
// by its Layout. Nothing else writes an inactive volume, so what it reads is consistent as
// long as the agent itself keeps the volume from being changed (removed, resized) meanwhile.
type RawVolume struct {
	layout *Layout
	files  map[string]*os.File
}

// OpenRaw opens the layout's devices, for writing too when writable.
func OpenRaw(l *Layout, writable bool) (_ *RawVolume, err error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	v := &RawVolume{layout: l, files: map[string]*os.File{}}
	defer func() {
		if err != nil {
			_ = v.Close()
		}
	}()
	for _, dev := range l.Devices() {
		f, err := os.OpenFile(dev, flag, 0)
		if err != nil {
			return nil, fmt.Errorf("open physical volume: %w", err)
		}
		v.files[dev] = f
	}
	return v, nil
}

// Size is the volume's size in bytes.
func (v *RawVolume) Size() int64 { return int64(v.layout.Size) }

// ReadAt reads len(p) bytes of the volume from off (io.ReaderAt).
func (v *RawVolume) ReadAt(p []byte, off int64) (int, error) {
	return v.do(p, off, func(f *os.File, b []byte, at int64) (int, error) { return f.ReadAt(b, at) })
}

// WriteAt writes p into the volume at off (io.WriterAt).
func (v *RawVolume) WriteAt(p []byte, off int64) (int, error) {
	return v.do(p, off, func(f *os.File, b []byte, at int64) (int, error) { return f.WriteAt(b, at) })
}

// do splits an access at the layout's device boundaries.
func (v *RawVolume) do(p []byte, off int64, io1 func(*os.File, []byte, int64) (int, error)) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	done := 0
	for done < len(p) {
		pos := uint64(off) + uint64(done)
		if pos >= v.layout.Size {
			return done, io.EOF
		}
		dev, at, n := v.layout.Locate(pos)
		n = min(n, uint64(len(p)-done))
		m, err := io1(v.files[dev], p[done:done+int(n)], int64(at))
		done += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				return done, fmt.Errorf("physical volume %s ends before the volume's extent at %d: %w", dev, at, io.ErrUnexpectedEOF)
			}
			return done, err
		}
	}
	return done, nil
}

// Sync flushes written data to the devices.
func (v *RawVolume) Sync() error {
	var errs []error
	for _, f := range v.files {
		errs = append(errs, f.Sync())
	}
	return errors.Join(errs...)
}

// Close closes the devices.
func (v *RawVolume) Close() error {
	var errs []error
	for _, f := range v.files {
		errs = append(errs, f.Close())
	}
	v.files = nil
	return errors.Join(errs...)
}
