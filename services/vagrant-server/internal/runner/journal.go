package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// journalKeep is how many started job ids the journal remembers.
const journalKeep = 4096

// Journal remembers the jobs this runner started, so it never runs one twice: upstream's
// protocol cannot confirm an assignment to the runner, and a job whose acknowledgement the
// server lost may be assigned again (at-least-once). A job id found here is refused. With a
// path the ids survive restarts: the file gets one line per job (no fsync: the server already
// holds such a job as running, so a lost line is a second defence lost, not a double run) and
// is rewritten with the newest journalKeep ids when it holds twice as many.
//
// A runner with several job slots also holds here the jobs its slots are taking: a job the
// server handed to two slots of one runner id (its first assignment's ack was lost and the
// job was assigned again) is taken by one slot only (Hold).
type Journal struct {
	path string
	mu   sync.Mutex
	ids  map[string]struct{}
	log  []string            // ids in start order, newest last
	held map[string]struct{} // jobs a slot is taking now
	file *os.File
}

// Why Hold refuses a job.
var (
	errAlreadyRan = errors.New("job already ran on this runner")
	errHeld       = errors.New("job is being taken by another slot of this runner")
)

// OpenJournal loads the journal kept at path (created when missing); "" keeps it in memory.
func OpenJournal(path string) (*Journal, error) {
	j := &Journal{path: path, ids: map[string]struct{}{}, held: map[string]struct{}{}}
	if path == "" {
		return j, nil
	}
	f, err := os.Open(path)
	switch {
	case err == nil:
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				j.add(id)
			}
		}
		err = errors.Join(sc.Err(), f.Close())
		if err != nil {
			return nil, fmt.Errorf("read job journal %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read job journal: %w", err)
	}
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	return j, nil
}

// Started reports whether job id was started here before.
func (j *Journal) Started(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.ids[id]
	return ok
}

// Hold reserves job id for the calling slot until Release: errAlreadyRan when it was started
// before, errHeld when another slot holds it.
func (j *Journal) Hold(id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.ids[id]; ok {
		return errAlreadyRan
	}
	if _, ok := j.held[id]; ok {
		return errHeld
	}
	j.held[id] = struct{}{}
	return nil
}

// Release ends Hold: the slot is done with job id (started or not).
func (j *Journal) Release(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.held, id)
}

// Record notes that job id starts now. A failure to write is returned; the id is remembered
// in memory anyway.
func (j *Journal) Record(id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.add(id)
	if j.file == nil {
		return nil
	}
	if len(j.log) >= 2*journalKeep {
		return j.rewrite()
	}
	if _, err := j.file.WriteString(id + "\n"); err != nil {
		return fmt.Errorf("write job journal: %w", err)
	}
	return nil
}

// Close closes the journal's file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.file == nil {
		return nil
	}
	err := j.file.Close()
	j.file = nil
	return err
}

func (j *Journal) add(id string) {
	if _, ok := j.ids[id]; ok {
		return
	}
	j.ids[id] = struct{}{}
	j.log = append(j.log, id)
}

// rewrite keeps the newest journalKeep ids, in memory and in a fresh file replacing the old
// one atomically, and reopens it for appending. Called with mu held (or before sharing).
func (j *Journal) rewrite() error {
	if len(j.log) > journalKeep {
		for _, id := range j.log[:len(j.log)-journalKeep] {
			delete(j.ids, id)
		}
		j.log = append([]string(nil), j.log[len(j.log)-journalKeep:]...)
	}
	if j.file != nil {
		_ = j.file.Close()
		j.file = nil
	}
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		return fmt.Errorf("job journal: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(j.path), "jobs-*")
	if err != nil {
		return fmt.Errorf("job journal: %w", err)
	}
	defer os.Remove(tmp.Name())
	var b strings.Builder
	for _, id := range j.log {
		b.WriteString(id + "\n")
	}
	_, err = tmp.WriteString(b.String())
	if err = errors.Join(err, tmp.Close()); err != nil {
		return fmt.Errorf("job journal: %w", err)
	}
	if err := os.Rename(tmp.Name(), j.path); err != nil {
		return fmt.Errorf("job journal: %w", err)
	}
	if j.file, err = os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return fmt.Errorf("job journal: %w", err)
	}
	return nil
}
