package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rkt/rkt/pkg/lock"
)

// fetchLockFile keeps blob and tree deletion away from fetches in any
// process: a fetch holds it shared while it runs, and sweeping unreferenced
// blobs and trees needs it exclusive. A sweep never waits for fetches: it is
// skipped and the unreferenced content is left to a later GC.
const fetchLockFile = "fetch.lock"

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
