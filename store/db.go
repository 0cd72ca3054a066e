package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	bolt "go.etcd.io/bbolt"
)

// Buckets of the index.
var (
	bucketImages  = []byte("images")  // image ID -> imageRecord JSON
	bucketRefs    = []byte("refs")    // name:tag or name@digest -> image ID
	bucketConfigs = []byte("configs") // image ID -> raw image config
	bucketMeta    = []byte("meta")    // "version" -> the index's format version
)

// dbVersion is the format of the index this code writes. An index without
// a version is format 1 (the first release); a newer one is refused rather
// than misread. Migrations from an older format go in migrate.
const dbVersion = 1

var keyVersion = []byte("version")

// txn wraps a bbolt transaction with the index operations.
type txn struct {
	tx *bolt.Tx
	s  *Store
}

// update runs fn in one read-write transaction; the database is opened for
// this transaction only (an exclusive flock, waited for up to dbTimeout).
func (s *Store) update(fn func(*txn) error) error {
	db, err := bolt.Open(s.dbPath(), 0o600, &bolt.Options{Timeout: s.dbTimeout})
	if err != nil {
		return fmt.Errorf("cannot open store database %q: %w", s.dbPath(), err)
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error { return fn(&txn{tx: tx, s: s}) })
}

// view runs fn in one read-only transaction on a read-only (shared flock)
// open of the database.
func (s *Store) view(fn func(*txn) error) error {
	db, err := bolt.Open(s.dbPath(), 0o600, &bolt.Options{Timeout: s.dbTimeout, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("cannot open store database %q: %w", s.dbPath(), err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error { return fn(&txn{tx: tx, s: s}) })
}

func (t *txn) init() error {
	for _, b := range [][]byte{bucketImages, bucketRefs, bucketConfigs, bucketMeta} {
		if _, err := t.tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("cannot create bucket %q: %w", b, err)
		}
	}
	v, err := t.version()
	if err != nil {
		return err
	}
	if err := t.migrate(v); err != nil {
		return err
	}
	return t.tx.Bucket(bucketMeta).Put(keyVersion, []byte(strconv.Itoa(dbVersion)))
}

// migrate brings an index of format from up to dbVersion. (Format 1 is
// the first: an unversioned index needs only its version recorded.)
func (t *txn) migrate(from int) error { return nil }

// version is the index's format: 1 when unrecorded; an error when it is
// newer than this code's.
func (t *txn) version() (int, error) {
	b := t.tx.Bucket(bucketMeta)
	if b == nil || b.Get(keyVersion) == nil {
		return 1, nil
	}
	v, err := strconv.Atoi(string(b.Get(keyVersion)))
	if err != nil {
		return 0, fmt.Errorf("corrupt store database: format version %q", b.Get(keyVersion))
	}
	if v > dbVersion {
		return 0, fmt.Errorf("the store database has format %d, newer than this rkt's %d (written by a newer rkt): %w", v, dbVersion, ErrNewerFormat)
	}
	return v, nil
}

// check fails if a bucket is missing or the version is not this code's
// (a new, older or newer database); Open then runs init.
func (t *txn) check() error {
	for _, b := range [][]byte{bucketImages, bucketRefs, bucketConfigs, bucketMeta} {
		if t.tx.Bucket(b) == nil {
			return fmt.Errorf("store database lacks bucket %q", b)
		}
	}
	v, err := t.version()
	if err != nil {
		return err
	}
	if v != dbVersion || t.tx.Bucket(bucketMeta).Get(keyVersion) == nil {
		return fmt.Errorf("store database has format %d, not %d", v, dbVersion)
	}
	return nil
}

func (t *txn) getImage(id string) (*imageRecord, error) {
	v := t.tx.Bucket(bucketImages).Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	var r imageRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("corrupt store record of image %s: %w", id, err)
	}
	return &r, t.loadConfig(&r)
}

// loadConfig sets r.cfg, parsing the raw config once per process (configs
// are immutable: the image ID is their digest).
func (t *txn) loadConfig(r *imageRecord) error {
	if c, ok := t.s.configs.Load(r.ID); ok {
		r.cfg = c.(*v1.ConfigFile)
		return nil
	}
	raw := t.tx.Bucket(bucketConfigs).Get([]byte(r.ID))
	if raw == nil {
		return fmt.Errorf("corrupt store: no config for image %s", r.ID)
	}
	cfg, err := parseConfig(r.ID, raw)
	if err != nil {
		return err
	}
	t.s.configs.Store(r.ID, cfg)
	r.cfg = cfg
	return nil
}

func (t *txn) putImage(r *imageRecord) error {
	sort.Strings(r.Names)
	sort.Strings(r.RepoDigests)
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cannot encode record of image %s: %w", r.ID, err)
	}
	if r.ConfigRaw != nil {
		if err := t.tx.Bucket(bucketConfigs).Put([]byte(r.ID), r.ConfigRaw); err != nil {
			return err
		}
		if r.cfg == nil {
			cfg, err := parseConfig(r.ID, r.ConfigRaw)
			if err != nil {
				return err
			}
			r.cfg = cfg
		}
	}
	return t.tx.Bucket(bucketImages).Put([]byte(r.ID), b)
}

func (t *txn) allImages() ([]*imageRecord, error) {
	recs, _, err := t.allImagesReusing(nil)
	return recs, err
}

// recordSeed seeds the hashes that tell an unchanged image record
// (allImagesReusing): secret to whoever writes records, so that none can
// be made to collide with another.
var recordSeed = maphash.MakeSeed()

// allImagesReusing is allImages, taking from prev (if not nil) the decoded
// record of each image whose encoding is the same as then; it also
// returns the hashes of the encodings it read, by image ID.
func (t *txn) allImagesReusing(prev *indexSnapshot) ([]*imageRecord, map[string]uint64, error) {
	var out []*imageRecord
	sums := map[string]uint64{}
	err := t.tx.Bucket(bucketImages).ForEach(func(k, v []byte) error {
		sum := maphash.Bytes(recordSeed, v)
		sums[string(k)] = sum
		if prev != nil {
			if r := prev.images[string(k)]; r != nil && prev.sums[string(k)] == sum {
				out = append(out, r)
				return nil
			}
		}
		var r imageRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("corrupt store record of image %s: %w", k, err)
		}
		out = append(out, &r)
		return t.loadConfig(&r)
	})
	if err == nil {
		t.pruneConfigs(out)
	}
	return out, sums, err
}

// pruneConfigs drops from the cache of parsed configs the images that recs,
// all the images of the index, do not hold: images removed by any process
// (a long-lived service would otherwise keep the config of every image it
// ever saw). A config dropped by a race with a newer transaction is only
// parsed again.
func (t *txn) pruneConfigs(recs []*imageRecord) {
	ids := make(map[string]bool, len(recs))
	for _, r := range recs {
		ids[r.ID] = true
	}
	t.s.configs.Range(func(k, _ any) bool {
		if !ids[k.(string)] {
			t.s.configs.Delete(k)
		}
		return true
	})
}

func (t *txn) getRef(ref string) string {
	return string(t.tx.Bucket(bucketRefs).Get([]byte(ref)))
}

// idsWithPrefix lists the image IDs that start with prefix.
func (t *txn) idsWithPrefix(prefix string) []string {
	c := t.tx.Bucket(bucketImages).Cursor()
	var ids []string
	for k, _ := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, _ = c.Next() {
		ids = append(ids, string(k))
	}
	return ids
}

// deleteImage removes an image and every reference to it.
func (t *txn) deleteImage(r *imageRecord) error {
	refs := t.tx.Bucket(bucketRefs)
	for _, n := range append(append([]string(nil), r.Names...), r.RepoDigests...) {
		if string(refs.Get([]byte(n))) == r.ID {
			if err := refs.Delete([]byte(n)); err != nil {
				return err
			}
		}
	}
	if err := t.tx.Bucket(bucketConfigs).Delete([]byte(r.ID)); err != nil {
		return err
	}
	t.s.configs.Delete(r.ID)
	return t.tx.Bucket(bucketImages).Delete([]byte(r.ID))
}

// setRef points ref (a name:tag or name@digest) at image r, taking it away
// from the image that had it. isDigest says which list of r it belongs to.
func (t *txn) setRef(r *imageRecord, ref string, isDigest bool) error {
	refs := t.tx.Bucket(bucketRefs)
	if prev := string(refs.Get([]byte(ref))); prev != "" && prev != r.ID {
		if old, err := t.getImage(prev); err != nil {
			return err
		} else if old != nil {
			old.Names = without(old.Names, ref)
			old.RepoDigests = without(old.RepoDigests, ref)
			if err := t.putImage(old); err != nil {
				return err
			}
		}
	}
	if isDigest {
		r.RepoDigests = with(r.RepoDigests, ref)
	} else {
		r.Names = with(r.Names, ref)
	}
	return refs.Put([]byte(ref), []byte(r.ID))
}

func with(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func without(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// ErrCorruptDB is the refusal of a store database that bbolt would read
// past its end (its newest meta page names pages the file does not have).
var ErrCorruptDB = errors.New("corrupt store database")

// bbolt's file format: a meta page is a 16-byte page header, then the
// magic, the version, the page size, flags, the root bucket (16 bytes),
// the freelist page, the high-water mark (pgid), the txid and an FNV-64a
// checksum of what precedes it.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	boltMetaLen    = 64
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64
	txid     uint64
}

// parseBoltMeta decodes the meta page in b, ok only when it is valid.
func parseBoltMeta(b []byte) (m boltMeta, ok bool) {
	if len(b) < boltPageHeader+boltMetaLen {
		return m, false
	}
	b = b[boltPageHeader : boltPageHeader+boltMetaLen]
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(b[:56])
	if le.Uint32(b[0:]) != boltMagic || le.Uint32(b[4:]) != boltVersion || le.Uint64(b[56:]) != h.Sum64() {
		return m, false
	}
	return boltMeta{pageSize: le.Uint32(b[8:]), pgid: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}, true
}

// newestBoltMeta reads the meta pages of the open database f and returns
// the newest valid one; ok is false when none is.
func newestBoltMeta(f *os.File) (newest boltMeta, ok bool) {
	buf := make([]byte, boltPageHeader+boltMetaLen)
	var metas []boltMeta
	if _, err := f.ReadAt(buf, 0); err == nil {
		if m, ok := parseBoltMeta(buf); ok {
			metas = append(metas, m)
		}
	}
	pageSize := int64(os.Getpagesize())
	if len(metas) > 0 {
		pageSize = int64(metas[0].pageSize)
	}
	if _, err := f.ReadAt(buf, pageSize); err == nil {
		if m, ok := parseBoltMeta(buf); ok {
			metas = append(metas, m)
		}
	}
	if len(metas) == 0 {
		return newest, false
	}
	newest = metas[0]
	for _, m := range metas[1:] {
		if m.txid > newest.txid {
			newest = m
		}
	}
	return newest, true
}

// checkDBSize refuses a database file shorter than its newest valid meta
// page says (bbolt would fault on the missing pages: SIGBUS, which kills
// the process). A missing or empty file, or one without a valid meta page,
// is left to bbolt (which creates, or refuses, it).
func checkDBSize(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot open store database %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot stat store database %q: %w", path, err)
	}
	newest, ok := newestBoltMeta(f)
	if !ok {
		return nil
	}
	if want := int64(newest.pgid) * int64(newest.pageSize); fi.Size() < want {
		return fmt.Errorf("cannot open store database %q: it has %d bytes, its index needs %d (truncated by a crash or a copy; move it aside to start an empty index, or restore it): %w",
			path, fi.Size(), want, ErrCorruptDB)
	}
	return nil
}
