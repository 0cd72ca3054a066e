// Package lock provides flock(2)-based locks on files and directories, like
// rkt's pkg/lock. A lock belongs to an open file description: it is shared
// with children that inherit the descriptor and released when the last
// copy is closed, which is how a pod stays locked while its stage1 lives.
package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by the Try* methods when another holder has the lock.
var ErrLocked = errors.New("file is locked")

// Kind says what a lock is taken on.
type Kind int

const (
	// Dir locks a directory.
	Dir Kind = iota
	// RegFile locks a regular file, created when missing.
	RegFile
)

// pollInterval is how often the context-aware blocking locks retry.
const pollInterval = 5 * time.Millisecond

// FileLock is a flock on one open file or directory.
type FileLock struct {
	path string
	f    *os.File
}

// New opens path for locking without taking a lock.
func New(path string, kind Kind) (*FileLock, error) {
	var f *os.File
	var err error
	switch kind {
	case Dir:
		f, err = os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	case RegFile:
		f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE|unix.O_CLOEXEC, 0o644)
	default:
		return nil, fmt.Errorf("cannot lock %q: unknown lock kind %d", path, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open %q for locking: %w", path, err)
	}
	return &FileLock{path: path, f: f}, nil
}

// FromFile locks f, an open file the caller created with its own owner and
// mode; the lock owns f.
func FromFile(f *os.File) *FileLock { return &FileLock{path: f.Name(), f: f} }

// TryExclusive opens path and takes an exclusive lock without waiting.
func TryExclusive(path string, kind Kind) (*FileLock, error) {
	return openAnd(path, kind, (*FileLock).TryExclusiveLock)
}

// TryShared opens path and takes a shared lock without waiting.
func TryShared(path string, kind Kind) (*FileLock, error) {
	return openAnd(path, kind, (*FileLock).TrySharedLock)
}

// Exclusive opens path and waits for an exclusive lock until ctx ends.
func Exclusive(ctx context.Context, path string, kind Kind) (*FileLock, error) {
	return openAnd(path, kind, func(l *FileLock) error { return l.ExclusiveLock(ctx) })
}

func openAnd(path string, kind Kind, take func(*FileLock) error) (*FileLock, error) {
	l, err := New(path, kind)
	if err != nil {
		return nil, err
	}
	if err := take(l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// TryExclusiveLock takes an exclusive lock or returns ErrLocked.
func (l *FileLock) TryExclusiveLock() error { return l.try(unix.LOCK_EX) }

// TrySharedLock takes a shared lock or returns ErrLocked.
func (l *FileLock) TrySharedLock() error { return l.try(unix.LOCK_SH) }

// ExclusiveLock waits for an exclusive lock until ctx ends.
func (l *FileLock) ExclusiveLock(ctx context.Context) error { return l.wait(ctx, unix.LOCK_EX) }

// SharedLock waits for a shared lock until ctx ends.
func (l *FileLock) SharedLock(ctx context.Context) error { return l.wait(ctx, unix.LOCK_SH) }

func (l *FileLock) try(how int) error {
	for {
		err := unix.Flock(int(l.f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrLocked
		default:
			return fmt.Errorf("cannot lock %q: %w", l.path, err)
		}
	}
}

func (l *FileLock) wait(ctx context.Context, how int) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := l.try(how)
		if !errors.Is(err, ErrLocked) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the lock on %q: %w", l.path, ctx.Err())
		case <-t.C:
		}
	}
}

// Unlock releases the lock (the file stays open).
func (l *FileLock) Unlock() error {
	if err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN); err != nil {
		return fmt.Errorf("cannot unlock %q: %w", l.path, err)
	}
	return nil
}

// File returns the locked file, e.g. to pass it to a child process that
// keeps the lock alive.
func (l *FileLock) File() *os.File { return l.f }

// Path returns the path the lock was opened on.
func (l *FileLock) Path() string { return l.path }

// Close closes the file; the lock is released unless a child inherited it.
func (l *FileLock) Close() error { return l.f.Close() }

// IsLocked reports whether someone holds any lock on path that conflicts
// with a shared lock (an exclusive one).
func IsLocked(path string, kind Kind) (bool, error) {
	l, err := TryShared(path, kind)
	if errors.Is(err, ErrLocked) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	l.Close()
	return false, nil
}
