package backup

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/plinth-dev/plinth/libs/storage/objectstore"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// BackupRequest is CreateBackup.
type BackupRequest struct {
	// Name is the backup's name (the Backup resource); VolumeHandle the volume's name.
	Name, VolumeHandle string
	Target             Target
}

// Backup starts a backup job, or reports the one already started for (name, volume): the
// first call returns it in progress, later calls its current state. A job cut short by an
// agent restart is restarted by the next call.
func (r *Runner) Backup(ctx context.Context, req BackupRequest) (Job, error) {
	existing, err := r.store.Get(ctx, r.node, KindBackup, req.Name, req.VolumeHandle)
	if err == nil && !(existing.State == Failed && existing.Retryable) {
		return existing, nil
	}
	if err != nil && !errors.Is(err, ErrJobNotFound) {
		return Job{}, err
	}
	dc, vol, err := r.volumes.Find(ctx, req.VolumeHandle)
	if err != nil {
		return Job{}, err
	}
	job, claimed, err := r.store.Claim(ctx, Job{Node: r.node, Kind: KindBackup, Name: req.Name, VolumeHandle: req.VolumeHandle,
		DeviceClass: dc.Name, Location: req.Target.Location, Store: req.Target.Ref(), Encrypted: req.Target.Key != nil, SizeBytes: vol.Size, Owner: r.owner}, false)
	if err != nil || !claimed {
		return job, err
	}
	r.log.InfoContext(ctx, "backup started", "name", req.Name, "volume", req.VolumeHandle, "target", req.Target)
	r.start(job, req.Target, func(ctx context.Context, done *atomic.Uint64) error {
		return r.runBackup(ctx, job, dc, vol, req.Target, done)
	})
	return job, nil
}

func (r *Runner) runBackup(ctx context.Context, job Job, dc *deviceclass.DeviceClass, vol volume.Volume, t Target, done *atomic.Uint64) error {
	release, err := r.volumes.Hold(ctx, dc, vol.Name, "backup "+job.Name, false)
	if err != nil {
		return err
	}
	defer release()
	st, err := t.open(r.partSize, r.concurrency)
	if err != nil {
		return err
	}
	// A manifest already there is this job's own (an earlier attempt finished the upload
	// and was cut short before recording it) or another backup's, which is never replaced.
	if m, err := readManifest(ctx, st); err == nil {
		if !m.belongsTo(job) {
			return &PathTakenError{Backup: m.Backup, VolumeHandle: m.VolumeHandle, Node: m.Node}
		}
		done.Store(m.SizeBytes)
		return nil
	} else if errors.Is(err, ErrBadManifest) {
		return fmt.Errorf("data_source.s3.path holds a manifest.json that is not this agent's; give each backup its own path: %w", err)
	} else if !errors.Is(err, ErrNoBackup) {
		return inStore(t, err)
	}
	src, err := r.openSource(ctx, dc, vol, job.ID)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := src.close(); cerr != nil {
			r.log.Warn("could not release the backup source", "job", job.ID, "error", cerr)
		}
	}()
	m, err := r.upload(ctx, st, t, src, done)
	if err != nil {
		return inStore(t, err)
	}
	m.Backup, m.VolumeHandle, m.Node, m.DeviceClass, m.VolumeGroup = job.Name, job.VolumeHandle, job.Node, dc.Name, dc.VolumeGroup
	if err := putManifest(ctx, st, m); errors.Is(err, objectstore.ErrExists) {
		if other, rerr := readManifest(ctx, st); rerr == nil && !other.belongsTo(job) {
			return &PathTakenError{Backup: other.Backup, VolumeHandle: other.VolumeHandle, Node: other.Node}
		}
	} else if err != nil {
		return inStore(t, fmt.Errorf("store manifest: %w", err))
	}
	return nil
}

func (m *Manifest) belongsTo(j Job) bool {
	return m.Backup == j.Name && m.VolumeHandle == j.VolumeHandle && m.Node == j.Node
}

// RestoreRequest is CreateLV with a data source.
type RestoreRequest struct {
	Volume volume.CreateRequest
	Target Target
	// Synchronous waits for the data and, on failure, removes the volume again.
	Synchronous bool
}

// Restore creates a volume from a backup. The backup's manifest is checked first (it
// exists, the key opens it, it fits), so a wrong request fails before anything is created.
// Then the volume is created and the data copied by a job: a synchronous request waits for
// it (a caller that gives up and asks again waits for the same job); otherwise Restore
// returns the new volume at once. Asking again for a volume whose restore failed, or was
// cut short, restores it again.
func (r *Runner) Restore(ctx context.Context, req RestoreRequest) (volume.Volume, error) {
	name := req.Volume.Name
	dc, err := r.volumes.Classes().Get(req.Volume.DeviceClass)
	if err != nil {
		return volume.Volume{}, &volume.ClassNotFoundError{Name: req.Volume.DeviceClass}
	}
	existing, err := r.store.Get(ctx, r.node, KindRestore, name, name)
	if err != nil && !errors.Is(err, ErrJobNotFound) {
		return volume.Volume{}, err
	}
	hadJob := err == nil
	if hadJob && existing.State != Failed && existing.DeviceClass == dc.Name {
		if _, vol, err := r.volumes.Get(ctx, dc.Name, name); err == nil {
			return r.settle(ctx, req, existing, vol)
		}
	}
	if !hadJob || existing.DeviceClass != dc.Name {
		if _, _, err := r.volumes.Get(ctx, dc.Name, name); err == nil {
			return volume.Volume{}, ErrNotRestored
		}
	}
	st, err := req.Target.open(r.partSize, r.concurrency)
	if err != nil {
		return volume.Volume{}, err
	}
	m, err := readManifest(ctx, st)
	if err != nil {
		return volume.Volume{}, inStore(req.Target, err)
	}
	if err := checkKey(m, req.Target.Key); err != nil {
		return volume.Volume{}, err
	}
	if m.SizeBytes > req.Volume.Size {
		return volume.Volume{}, &TooSmallError{Backup: m.SizeBytes, Volume: req.Volume.Size}
	}
	job, claimed, err := r.store.Claim(ctx, Job{Node: r.node, Kind: KindRestore, Name: name, VolumeHandle: name, DeviceClass: dc.Name,
		Location: req.Target.Location, Store: req.Target.Ref(), Encrypted: m.Encrypted, Synchronous: req.Synchronous, SizeBytes: m.SizeBytes, Owner: r.owner}, true)
	if err != nil {
		return volume.Volume{}, err
	}
	if !claimed { // a concurrent identical request claimed it first
		_, vol, err := r.volumes.Get(ctx, dc.Name, name)
		if err != nil {
			return volume.Volume{}, err
		}
		return r.settle(ctx, req, job, vol)
	}
	vol, _, err := r.volumes.Create(ctx, req.Volume)
	if err != nil {
		r.finish(job, Outcome{State: Failed, Message: "create volume: " + err.Error()})
		return volume.Volume{}, err
	}
	r.log.InfoContext(ctx, "restore started", "volume", name, "device_class", dc.Name, "synchronous", req.Synchronous, "target", req.Target)
	r.start(job, req.Target, func(ctx context.Context, done *atomic.Uint64) error {
		return r.runRestore(ctx, job, dc, vol, m, req.Target, done)
	})
	return r.settle(ctx, req, job, vol)
}

// settle answers a restore request for a job: a synchronous one waits for the job.
func (r *Runner) settle(ctx context.Context, req RestoreRequest, job Job, vol volume.Volume) (volume.Volume, error) {
	if !req.Synchronous || job.State == Complete {
		return vol, nil
	}
	if err := r.wait(ctx, job); err != nil {
		return volume.Volume{}, err
	}
	return vol, nil
}

func (r *Runner) runRestore(ctx context.Context, job Job, dc *deviceclass.DeviceClass, vol volume.Volume, m *Manifest, t Target, done *atomic.Uint64) (err error) {
	release, err := r.volumes.Hold(ctx, dc, vol.Name, "restore", true)
	if err != nil {
		return err
	}
	defer func() {
		release()
		if err != nil && job.Synchronous {
			// The caller is told of the failure and may retry from scratch: leave nothing
			// half written behind. (An asynchronous restore's volume belongs to its caller.)
			rctx, cancel := context.WithTimeout(context.Background(), lvmCleanupTimeout)
			defer cancel()
			if rerr := r.volumes.RemoveOwn(rctx, dc, vol.Name); rerr != nil {
				r.log.Error("could not remove the volume of a failed restore", "volume", vol.Name, "error", rerr)
			}
		}
	}()
	st, err := t.open(r.partSize, r.concurrency)
	if err != nil {
		return err
	}
	dst, err := r.openDestination(ctx, dc, vol)
	if err != nil {
		return err
	}
	defer dst.Close()
	return inStore(t, r.download(ctx, st, m, t.Key, dst, done))
}
