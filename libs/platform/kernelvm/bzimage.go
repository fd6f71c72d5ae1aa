package kernelvm

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// extractVmlinux writes the ELF kernel inside bzImage to dst, when it is xz (Debian's) or
// gzip compressed and has the PVH entry note QEMU boots it by; otherwise it returns why not
// and writes nothing.
func extractVmlinux(ctx context.Context, bzImage, dst string) error {
	bz, err := os.ReadFile(bzImage)
	if err != nil {
		return err
	}
	payload, err := bzPayload(bz)
	if err != nil {
		return err
	}
	var elfData []byte
	switch {
	case bytes.HasPrefix(payload, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		// Go's library has no xz; xz-utils is on nearly every Debian, busybox's xz lacks
		// the BCJ filter the kernel's stream uses.
		xz, err := progXZ.look()
		if err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, xz, "-dc", "--single-stream")
		cmd.Stdin = bytes.NewReader(payload)
		if elfData, err = cmd.Output(); err != nil {
			return fmt.Errorf("xz -d the kernel: %w", err)
		}
	case bytes.HasPrefix(payload, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return err
		}
		zr.Multistream(false)
		if elfData, err = io.ReadAll(zr); err != nil {
			return fmt.Errorf("gunzip the kernel: %w", err)
		}
	default:
		return fmt.Errorf("the kernel's payload is compressed in a way this package does not read (% x)", payload[:min(6, len(payload))])
	}
	if err := checkPVH(elfData); err != nil {
		return err
	}
	return os.WriteFile(dst, elfData, 0o644)
}

// bzPayload returns the compressed kernel of a bzImage (boot protocol 2.08 or later, where
// the header gives its offset and length).
func bzPayload(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage")
	}
	if v := binary.LittleEndian.Uint16(bz[0x206:]); v < 0x208 {
		return nil, fmt.Errorf("boot protocol %#x is older than 2.08", v)
	}
	setupSects := int(bz[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	start := (setupSects+1)*512 + int(binary.LittleEndian.Uint32(bz[0x248:]))
	end := start + int(binary.LittleEndian.Uint32(bz[0x24c:]))
	if start >= end || end > len(bz) {
		return nil, errors.New("the bzImage's payload lies outside it")
	}
	return bz[start:end], nil
}

// checkPVH reports whether data is an ELF kernel with Xen's PHYS32_ENTRY note, the entry
// point QEMU's -kernel uses for an uncompressed kernel.
func checkPVH(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the kernel's payload is not ELF: %w", err)
	}
	const xenElfnotePhys32Entry = 18
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		notes, err := io.ReadAll(p.Open())
		if err != nil {
			return err
		}
		for len(notes) >= 12 {
			nameSize := int(binary.LittleEndian.Uint32(notes))
			descSize := int(binary.LittleEndian.Uint32(notes[4:]))
			typ := binary.LittleEndian.Uint32(notes[8:])
			nameEnd := 12 + align4(nameSize)
			if nameEnd > len(notes) {
				break
			}
			if typ == xenElfnotePhys32Entry && string(bytes.TrimRight(notes[12:12+nameSize], "\x00")) == "Xen" {
				return nil
			}
			next := nameEnd + align4(descSize)
			if next > len(notes) {
				break
			}
			notes = notes[next:]
		}
	}
	return errors.New("the kernel has no PVH entry note")
}

func align4(n int) int { return (n + 3) &^ 3 }
