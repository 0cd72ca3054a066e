// Package store is rkt's image store: content-addressed blobs (manifests,
// configs, compressed layers) under <data dir>/cas/blobs/sha256, an index of
// images and references in a bbolt database (<data dir>/cas/db/store.db), and
// every layer unpacked once under <data dir>/cas/tree/<chain ID hex> in
// overlayfs form.
//
// Several processes may use one store at the same time (a long-lived
// kubelet-service and short CLI commands): the database is opened for each
// transaction only, blobs and trees become visible by an atomic rename, and a
// process killed at any point leaves a consistent store.
package store

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rkt/rkt/pkg/fileperm"
)

// Layout of the store below the data directory.
const (
	casDir   = "cas"
	blobsDir = "blobs/sha256"
	dbDir    = "db"
	dbFile   = "store.db"
	treeDir  = "tree"
	tmpDir   = "tmp"
)

// DefaultDBTimeout is how long an operation waits for the database lock held
// by another process.
const DefaultDBTimeout = 60 * time.Second

// Store is an image store rooted at <data dir>/cas. It holds no open file
// between calls and is safe for concurrent use by goroutines and processes.
type Store struct {
	dir       string
	dbTimeout time.Duration
	configs   sync.Map // image ID -> *v1.ConfigFile, parsed once
	keys      keyLocks // per blob digest / chain ID work in this process
	usage     usageCache
	snap      snapshotCache // KeepIndex
	bg        background    // RemovesInBackground
}

// Open creates (if needed) and opens the store of the rkt data directory
// dataDir.
func Open(dataDir string) (*Store, error) {
	if dataDir == "" {
		return nil, fmt.Errorf("cannot open store: empty data directory")
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("cannot open store in %q: %w", dataDir, err)
	}
	s := &Store{dir: filepath.Join(abs, casDir), dbTimeout: DefaultDBTimeout}
	// The rkt group reads the index and the blobs (read-only CLI use);
	// unpacked layers, whose files may be setuid, and temporary files are
	// root's only (overlay lowerdirs are opened with the mounter's rights).
	if err := fileperm.MkdirAll(abs, fileperm.Traversable); err != nil {
		return nil, fmt.Errorf("cannot create data directory: %w", err)
	}
	for _, d := range []struct {
		path  string
		class fileperm.Class
	}{
		{s.dir, fileperm.Shared},
		{filepath.Join(s.dir, blobsDir), fileperm.Shared},
		{filepath.Join(s.dir, dbDir), fileperm.Shared},
		{filepath.Join(s.dir, treeDir), fileperm.Private},
		{filepath.Join(s.dir, tmpDir), fileperm.Private},
	} {
		if err := fileperm.MkdirAll(d.path, d.class); err != nil {
			return nil, fmt.Errorf("cannot create store directory: %w", err)
		}
	}
	if err := checkDBSize(s.dbPath()); err != nil {
		return nil, err
	}
	// A read-only check first, so that users who may only read the store
	// (and processes racing a writer) do not need the exclusive lock.
	if s.view(func(tx *txn) error { return tx.check() }) != nil {
		if err := s.update(func(tx *txn) error { return tx.init() }); err != nil {
			return nil, err
		}
	}
	if err := fileperm.Apply(s.dbPath(), fileperm.Shared); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir returns the store's root directory (<data dir>/cas).
func (s *Store) Dir() string { return s.dir }

// SetDBTimeout changes how long operations wait for the database lock.
func (s *Store) SetDBTimeout(d time.Duration) { s.dbTimeout = d }

func (s *Store) blobPath(hex string) string { return filepath.Join(s.dir, blobsDir, hex) }
func (s *Store) treePath(hex string) string { return filepath.Join(s.dir, treeDir) + "/" + hex }
func (s *Store) tmpPath() string            { return filepath.Join(s.dir, tmpDir) }
func (s *Store) dbPath() string             { return filepath.Join(s.dir, dbDir, dbFile) }
