package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rkt/rkt/pkg/fileperm"
)

// rkt 1.x's store, in <data dir>/cas beside this one's: a ql database
// (db/ql.db), ACIs uncompressed under blob/sha512/<2 hex>/sha512-<64 hex>
// (the key: half a SHA-512 of the tar), their manifests under
// imageManifest/, rendered trees tree/deps-sha512-<hex>, lock dirs
// imagelocks/ and treestorelocks/. This store reads the ACIs and never
// writes, moves or removes any of it: its GC passes over names it does not
// make (see gcTrees).
const (
	legacyDBFile  = "db/ql.db"
	legacyBlobDir = "blob/sha512"
	legacyKeyHex  = 64
	legacyMarker  = "rkt1-imported.json"
)

// isLegacyKey reports whether s is an image key of rkt 1.x: "sha512-" and
// 64 lower-case hex digits. (This file's checks are no regexps: compiled
// at package init they held ~40 KiB of heap in every rkt process.)
func isLegacyKey(s string) bool {
	hexPart, ok := strings.CutPrefix(s, "sha512-")
	return ok && len(hexPart) == legacyKeyHex && isLowerHex(hexPart)
}

// isLowerHex reports whether s is all lower-case hex digits.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Legacy is what rkt 1.x left in a data directory's store.
type Legacy struct {
	Dir    string        // <data dir>/cas
	Index  string        // rkt 1.x's ql database, "" if absent
	Images []LegacyImage // its ACIs, by key
	Trees  []string      // its rendered trees (cas/tree/deps-*)
	Bytes  int64         // bytes of its ACIs
	// Imported is what the last ImportLegacy recorded, nil if none ran.
	Imported *LegacyRecord
}

// LegacyImage is one ACI of rkt 1.x's store.
type LegacyImage struct {
	Key      string       // "sha512-<64 hex>", rkt 1.x's image ID
	Path     string       // the ACI file
	Size     int64        // its bytes
	Manifest *ACIManifest // nil when Err is set
	Err      error        // why its manifest cannot be read
}

// LegacyRecord says what ImportLegacy did, kept in <cas>/rkt1-imported.json.
type LegacyRecord struct {
	At     time.Time         `json:"at"`
	Images map[string]string `json:"images"` // key -> image ID, or "skipped: <why>"
}

// FindLegacy looks for rkt 1.x's store in dataDir and lists its ACIs;
// it returns nil when there is none.
func FindLegacy(dataDir string) (*Legacy, error) {
	cas := filepath.Join(dataDir, casDir)
	l := &Legacy{Dir: cas}
	found := false
	if _, err := os.Stat(filepath.Join(cas, legacyDBFile)); err == nil {
		l.Index, found = filepath.Join(cas, legacyDBFile), true
	}
	shards, err := os.ReadDir(filepath.Join(cas, legacyBlobDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cannot list rkt 1.x images: %w", err)
	}
	for _, sh := range shards {
		dir := filepath.Join(cas, legacyBlobDir, sh.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // not a shard directory
		}
		for _, e := range entries {
			if !isLegacyKey(e.Name()) || !e.Type().IsRegular() {
				continue
			}
			found = true
			li := LegacyImage{Key: e.Name(), Path: filepath.Join(dir, e.Name())}
			if fi, err := e.Info(); err == nil {
				li.Size = fi.Size()
				l.Bytes += li.Size
			}
			li.Manifest, li.Err = ReadACIManifest(li.Path)
			l.Images = append(l.Images, li)
		}
	}
	trees, _ := os.ReadDir(filepath.Join(cas, treeDir))
	for _, t := range trees {
		if strings.HasPrefix(t.Name(), "deps-") {
			found = true
			l.Trees = append(l.Trees, filepath.Join(cas, treeDir, t.Name()))
		}
	}
	if !found {
		return nil, nil
	}
	sort.Slice(l.Images, func(i, j int) bool { return l.Images[i].Key < l.Images[j].Key })
	if b, err := os.ReadFile(filepath.Join(cas, legacyMarker)); err == nil {
		var r LegacyRecord
		if json.Unmarshal(b, &r) == nil {
			l.Imported = &r
		}
	}
	return l, nil
}

// path returns the ACI a dependency's image ID names ("sha512-" and at
// least the 64 hex of a key).
func (l *Legacy) path(id string) (string, error) {
	if len(id) < len("sha512-")+legacyKeyHex || !isLegacyKey(id[:len("sha512-")+legacyKeyHex]) {
		return "", fmt.Errorf("image ID %q: %w", id, ErrUnsupportedACI)
	}
	key := id[:len("sha512-")+legacyKeyHex]
	for _, li := range l.Images {
		if li.Key == key {
			return li.Path, nil
		}
	}
	return "", fmt.Errorf("image %s is not in the rkt 1.x store: %w", key, ErrImageNotFound)
}

// LegacyImport is the outcome of importing one ACI.
type LegacyImport struct {
	Key   string
	Name  string // the ACI's name, "" if unreadable
	Image *Image // the image it became, nil if skipped or failed
	Skip  string // why it was not imported, if it was not
	Err   error  // the import failed
}

// ImportLegacy imports every ACI of l that is an app image (rkt 1.x's
// stage1 images have no use here) into the store and records the outcome.
// rkt 1.x's files are only read. Running it again imports again, to the
// same image IDs.
func (s *Store) ImportLegacy(ctx context.Context, l *Legacy) ([]LegacyImport, error) {
	rec := LegacyRecord{At: time.Now().UTC(), Images: map[string]string{}}
	var out []LegacyImport
	for _, li := range l.Images {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		r := LegacyImport{Key: li.Key}
		switch {
		case li.Err != nil:
			r.Skip = li.Err.Error()
		case strings.HasPrefix(li.Manifest.Name, "coreos.com/rkt/stage1-"):
			r.Name, r.Skip = li.Manifest.Name, "a stage1 of rkt 1.x"
		default:
			r.Name = li.Manifest.Name
			r.Image, r.Err = s.ImportACI(ctx, li.Path, ACIOptions{Dependency: l.path}, FetchOptions{})
			if errors.Is(r.Err, ErrUnsupportedACI) {
				r.Skip, r.Err = r.Err.Error(), nil
			}
		}
		switch {
		case r.Image != nil:
			rec.Images[li.Key] = r.Image.ID
		case r.Err != nil:
			rec.Images[li.Key] = "failed: " + r.Err.Error()
		default:
			rec.Images[li.Key] = "skipped: " + r.Skip
		}
		out = append(out, r)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return out, fmt.Errorf("cannot encode the record of the rkt 1.x import: %w", err)
	}
	if err := fileperm.WriteFile(filepath.Join(s.dir, legacyMarker), append(b, '\n'), fileperm.Shared); err != nil {
		return out, fmt.Errorf("cannot record the rkt 1.x import: %w", err)
	}
	l.Imported = &rec
	return out, nil
}

// LegacyState tells, without reading any ACI, whether rkt 1.x's store is
// in dataDir and whether ImportLegacy ran on it.
func LegacyState(dataDir string) (present, imported bool) {
	cas := filepath.Join(dataDir, casDir)
	for _, p := range []string{legacyDBFile, legacyBlobDir} {
		if _, err := os.Stat(filepath.Join(cas, p)); err == nil {
			present = true
		}
	}
	_, err := os.Stat(filepath.Join(cas, legacyMarker))
	return present, present && err == nil
}

// isLegacyDBWAL reports whether name is the write-ahead log of the ql
// database (a dot and the SHA-1 of its name).
func isLegacyDBWAL(name string) bool {
	sum, ok := strings.CutPrefix(name, ".")
	return ok && len(sum) == 40 && isLowerHex(sum)
}

// Remove deletes rkt 1.x's store: its database (and log and backups),
// ACIs, manifests, rendered trees and lock directories, and the record
// of the import. Nothing of this store is touched.
func (l *Legacy) Remove() error {
	paths := []string{
		filepath.Join(l.Dir, legacyDBFile), filepath.Join(l.Dir, "db-backups"),
		filepath.Join(l.Dir, "blob"), filepath.Join(l.Dir, "imageManifest"),
		filepath.Join(l.Dir, "imagelocks"), filepath.Join(l.Dir, "treestorelocks"),
		filepath.Join(l.Dir, legacyMarker),
	}
	if entries, err := os.ReadDir(filepath.Join(l.Dir, dbDir)); err == nil {
		for _, e := range entries {
			if isLegacyDBWAL(e.Name()) {
				paths = append(paths, filepath.Join(l.Dir, dbDir, e.Name()))
			}
		}
	}
	paths = append(paths, l.Trees...)
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("cannot remove rkt 1.x's %s: %w", p, err)
		}
	}
	return nil
}
