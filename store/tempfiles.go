package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Temporary entries (blobs being written, trees being unpacked, archives
// being read, trees being removed) live in <cas>/tmp under names
// "<kind>-<pid>.<process start time>-<random>" and are flock-held while in
// use. cleanTemp removes an entry once nobody holds its lock and the
// process that made it is gone, so what a killed process left is cleaned on
// the next use of the store, and nothing in use ever is.

// staleTempAge is how old an unlocked entry whose owner cannot be told
// (a foreign name) must be before cleanTemp removes it.
var staleTempAge = time.Minute

var (
	selfStartOnce sync.Once
	selfStart     string
)

// tempPrefix returns the name prefix of this process's temporary entries.
func tempPrefix(kind string) string {
	selfStartOnce.Do(func() { selfStart = processStart(os.Getpid()) })
	return fmt.Sprintf("%s-%d.%s-", kind, os.Getpid(), selfStart)
}

// processStart returns the start time (clock ticks since boot) of a
// process, "" if it does not exist or has exited (a zombie not reaped yet:
// a helper process whose parent died).
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces: count from its ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" { // field 3: state
		return ""
	}
	return f[19] // field 22: starttime
}

// ownerGone tells from a temporary entry's name whether the process that
// made it has exited; known is false for names without an owner.
func ownerGone(name string) (gone, known bool) {
	_, rest, ok := strings.Cut(name, "-")
	if !ok {
		return false, false
	}
	owner, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false, false
	}
	pidStr, start, ok := strings.Cut(owner, ".")
	pid, err := strconv.Atoi(pidStr)
	if !ok || err != nil || start == "" {
		return false, false
	}
	return processStart(pid) != start, true
}

// newTempFile creates a locked file in the store's tmp dir.
func (s *Store) newTempFile(kind string) (*os.File, error) {
	f, err := os.CreateTemp(s.tmpPath(), tempPrefix(kind))
	if err != nil {
		return nil, fmt.Errorf("cannot create temporary file in store: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("cannot lock temporary file: %w", err)
	}
	return f, nil
}

// newTempDir creates a directory in the store's tmp dir, locked until the
// returned file is closed.
func (s *Store) newTempDir(kind string) (string, *os.File, error) {
	dir, err := os.MkdirTemp(s.tmpPath(), tempPrefix(kind))
	if err != nil {
		return "", nil, fmt.Errorf("cannot create temporary directory in store: %w", err)
	}
	lock, err := os.Open(dir)
	if err == nil {
		if err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("cannot lock temporary directory: %w", err)
	}
	return dir, lock, nil
}

// cleanTemp removes the temporary entries of processes that are gone.
func (s *Store) cleanTemp() error {
	entries, err := os.ReadDir(s.tmpPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list store temporary dir: %w", err)
	}
	for _, e := range entries {
		if gone, known := ownerGone(e.Name()); known && !gone {
			continue
		} else if !known {
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < staleTempAge {
				continue
			}
		}
		p := s.tmpPath() + "/" + e.Name()
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if err := removeTree(p); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	return nil
}
