package store

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// indexReader is what resolving a reference reads of the index: a
// transaction (txn) or an indexSnapshot.
type indexReader interface {
	getImage(id string) (*imageRecord, error)
	getRef(ref string) string
	idsWithPrefix(prefix string) []string
	allImages() ([]*imageRecord, error)
}

// indexSnapshot is the index decoded in memory as of one committed
// transaction of one database file. Its records are shared: read only
// (imageRecord.image copies).
type indexSnapshot struct {
	dbState
	images map[string]*imageRecord
	sums   map[string]uint64 // the hash of each record's encoding
	ids    []string          // sorted
	refs   map[string]string
}

// dbState names a committed state of the database: the file (device,
// inode, and its change time and size, so that a new file that reuses the
// inode number differs) and the newest transaction ID in it.
type dbState struct {
	dev, ino, size uint64
	ctime          syscall.Timespec
	txid           uint64
}

func (x *indexSnapshot) getImage(id string) (*imageRecord, error) { return x.images[id], nil }
func (x *indexSnapshot) getRef(ref string) string                 { return x.refs[ref] }

func (x *indexSnapshot) allImages() ([]*imageRecord, error) {
	out := make([]*imageRecord, 0, len(x.ids))
	for _, id := range x.ids {
		out = append(out, x.images[id])
	}
	return out, nil
}

func (x *indexSnapshot) idsWithPrefix(prefix string) []string {
	var out []string
	for i := sort.SearchStrings(x.ids, prefix); i < len(x.ids) && strings.HasPrefix(x.ids[i], prefix); i++ {
		out = append(out, x.ids[i])
	}
	return out
}

// snapshotCache holds the snapshot of a Store that keeps its index
// (KeepIndex).
type snapshotCache struct {
	on   atomic.Bool
	mu   sync.Mutex
	last *indexSnapshot
}

// KeepIndex makes the Store answer image lookups and lists (ResolveImage,
// ResolveImageForUse, ListImages) from the index decoded in memory, for a
// long-lived process: the kubelet-service, asked for an image's status
// before every container. The database stays the truth for every process:
// a call first reads the newest committed transaction's ID from the
// database's meta pages (no lock: a meta page being written fails its
// checksum, and the other is then the newest committed one) and decodes
// the index again when it moved, whoever wrote it. A short-lived process
// should not: its first lookup would decode every record.
func (s *Store) KeepIndex() { s.snap.on.Store(true) }

// readIndex runs fn on the kept snapshot when the Store keeps its index,
// else on a read-only transaction.
func (s *Store) readIndex(fn func(indexReader) error) error {
	if !s.snap.on.Load() {
		return s.view(func(tx *txn) error { return fn(tx) })
	}
	x, err := s.snapshot()
	if err != nil {
		return err
	}
	return fn(x)
}

// snapshot returns the snapshot of the database's newest transaction,
// decoding it when it is not the one kept.
func (s *Store) snapshot() (*indexSnapshot, error) {
	v, ok := s.newestState()
	s.snap.mu.Lock()
	last := s.snap.last
	s.snap.mu.Unlock()
	if ok && last != nil && last.dbState == v {
		return last, nil
	}
	x := &indexSnapshot{images: map[string]*imageRecord{}, refs: map[string]string{}}
	err := s.view(func(tx *txn) error {
		// a write changes one or a few records: the others are not
		// decoded again
		recs, sums, err := tx.allImagesReusing(last)
		if err != nil {
			return err
		}
		x.sums = sums
		for _, r := range recs {
			x.images[r.ID] = r
			x.ids = append(x.ids, r.ID)
		}
		sort.Strings(x.ids)
		if err := tx.tx.Bucket(bucketRefs).ForEach(func(k, v []byte) error {
			x.refs[string(k)] = string(v)
			return nil
		}); err != nil {
			return fmt.Errorf("cannot read image references: %w", err)
		}
		// what was read: a commit between newestState and this
		// transaction only costs one more decoding
		x.dbState = v
		x.txid = uint64(tx.tx.ID())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ok {
		s.snap.mu.Lock()
		s.snap.last = x
		s.snap.mu.Unlock()
	}
	return x, nil
}

// newestState reads the database file's identity and the ID of its
// newest committed transaction (from its meta pages).
func (s *Store) newestState() (dbState, bool) {
	f, err := os.Open(s.dbPath())
	if err != nil {
		return dbState{}, false
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return dbState{}, false
	}
	m, ok := newestBoltMeta(f)
	if !ok {
		return dbState{}, false
	}
	return dbState{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), ctime: st.Ctim, txid: m.txid}, true
}
