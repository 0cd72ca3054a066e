package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/rkt/rkt/pkg/lock"
)

// fetchLockFile keeps blob and tree deletion away from fetches and from
// pods being made (Hold) in any process: those hold it shared while they
// run, and sweeping unreferenced blobs and trees needs it exclusive. A
// sweep never waits for them: it is skipped and the unreferenced content
// is left to a later GC.
const fetchLockFile = "fetch.lock"

// Hold keeps every blob and unpacked tree of the store from being deleted
// (by RemoveImage, GC or a fetch's rollback) until it is closed; image
// records may still be removed. It covers the time between resolving an
// image for a pod and the pod manifest listing it (ImagesInUse) with its
// layers mounted, during which nothing else shows the image in use.
func (s *Store) Hold(ctx context.Context) (io.Closer, error) {
	l, err := s.holdFetchLock(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// holdFetchLock takes the fetch lock shared, waiting only for a running
// sweep (short) or until ctx ends.
func (s *Store) holdFetchLock(ctx context.Context) (*lock.FileLock, error) {
	l, err := lock.New(filepath.Join(s.dir, fetchLockFile), lock.RegFile)
	if err != nil {
		return nil, err
	}
	if err := l.SharedLock(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("cannot take the store's fetch lock: %w", err)
	}
	return l, nil
}

// trySweepLock takes the fetch lock exclusively without waiting. It returns
// nil and no error while a fetch is running.
func (s *Store) trySweepLock() (*lock.FileLock, error) {
	l, err := lock.TryExclusive(filepath.Join(s.dir, fetchLockFile), lock.RegFile)
	if errors.Is(err, lock.ErrLocked) {
		return nil, nil
	}
	return l, err
}
