package volume

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// Remove deletes a volume; a volume that does not exist is already removed (lvmd's rule).
// A volume a backup or restore holds is a *BusyError.
func (s *Service) Remove(ctx context.Context, class, name string) error {
	dc, err := s.class(class)
	if err != nil {
		return err
	}
	return s.remove(ctx, dc, name, false)
}

// remove deletes a volume; force skips the hold check (a failed restore removing its own
// half-written volume).
func (s *Service) remove(ctx context.Context, dc *deviceclass.DeviceClass, name string, force bool) error {
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return err
	}
	defer unlock()
	if by, held := s.holder(dc, name); held && !force {
		return &BusyError{Volume: name, By: by}
	}
	_, ok, err := s.find(ctx, dc, name)
	if err != nil || !ok {
		return err
	}
	if err := s.lvm.Remove(ctx, dc.VolumeGroup, name); err != nil && !errors.Is(err, lvm.ErrLVNotFound) {
		return lvError(err, "remove")
	}
	s.log.InfoContext(ctx, "removed a logical volume", "device_class", dc.Name, "name", name)
	s.recordChangeAndList(ctx, dc)
	return nil
}

// RemoveOwn deletes a volume that the caller itself holds (see Hold).
func (s *Service) RemoveOwn(ctx context.Context, dc *deviceclass.DeviceClass, name string) error {
	return s.remove(ctx, dc, name, true)
}

// Hold marks a volume as in use by a backup (shared: several backups may read it) or a
// restore (exclusive: nothing may read a volume being written). Remove refuses a held
// volume; a conflicting Hold fails with *BusyError. The hold is taken under the volume
// group's lock after checking the volume exists, so it cannot slip between a Remove's
// check and its lvremove. release ends the hold.
func (s *Service) Hold(ctx context.Context, dc *deviceclass.DeviceClass, lv, by string, exclusive bool) (release func(), err error) {
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok, err := s.find(ctx, dc, lv); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: %s", ErrVolumeNotFound, lv)
	}
	key := dc.VolumeGroup + "/" + lv
	s.mu.Lock()
	defer s.mu.Unlock()
	h, held := s.busy[key]
	if held && (exclusive || h.exclusive) {
		return nil, &BusyError{Volume: lv, By: h.by}
	}
	if !held {
		h = &hold{by: by, exclusive: exclusive}
		s.busy[key] = h
	}
	h.count++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if h.count--; h.count == 0 {
				delete(s.busy, key)
			}
		})
	}, nil
}

// hold is what keeps a volume busy.
type hold struct {
	by        string
	exclusive bool
	count     int
}

func (s *Service) holder(dc *deviceclass.DeviceClass, lv string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.busy[dc.VolumeGroup+"/"+lv]
	if !ok {
		return "", false
	}
	return h.by, true
}
