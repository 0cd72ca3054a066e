package stage0

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/lock"
)

func TestCheckArchivePath(t *testing.T) {
	d := t.TempDir()
	taken := filepath.Join(d, "taken.tar")
	if err := os.WriteFile(taken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkArchivePath(filepath.Join(d, "new.tar")); err != nil {
		t.Errorf("a new file: %v", err)
	}
	if err := checkArchivePath(taken); !errors.Is(err, ErrExists) {
		t.Errorf("an existing file: %v, want ErrExists", err)
	}
	for _, p := range []string{"", "/", "rel.tar", d + "/x/../new.tar", filepath.Join(d, "missing", "new.tar"), filepath.Join(taken, "new.tar")} {
		if err := checkArchivePath(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkArchivePath(%q) = %v, want ErrInvalid", p, err)
		}
	}
}

func TestWriteArchive(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "app", "criu"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"checkpoint.json": "{}", "app/criu/pages-1.img": "pages", "app/rootfs.tar": "layer"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(out, "c.tar")
	if err := writeArchive(context.Background(), src, archive); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(archive)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("archive: %v, mode %v, want 0600", err, fi.Mode())
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[h.Name] = true
		if h.Typeflag == tar.TypeDir && h.Mode&0o777 != 0o700 || h.Typeflag == tar.TypeReg && h.Mode&0o777 != 0o600 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
		if want, ok := files[h.Name]; ok {
			if b, _ := io.ReadAll(tr); string(b) != want {
				t.Errorf("%s: %q, want %q", h.Name, b, want)
			}
		}
	}
	for name := range files {
		if !seen[name] {
			t.Errorf("archive lacks %s (has %v)", name, seen)
		}
	}
	if err := writeArchive(context.Background(), src, archive); !errors.Is(err, ErrExists) {
		t.Errorf("over an existing archive: %v, want ErrExists", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := writeArchive(ctx, src, filepath.Join(out, "late.tar")); !errors.Is(err, context.Canceled) {
		t.Errorf("after its context ended: %v, want context.Canceled", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("%s holds %d entries, want the archive only", out, len(ents))
	}
}

func TestRemoveStaleCheckpoints(t *testing.T) {
	p := &pod{uuid: "x", state: dirRun, dir: t.TempDir()}
	r := &Runtime{log: slog.New(slog.DiscardHandler)}
	base := p.layout().Checkpoints()
	old := time.Now().Add(-2 * newDirMinAge)
	mk := func(name string, mtime time.Time) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(d, "app", "criu"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale, busy, young := mk("stale", old), mk("busy", old), mk("young", time.Now())
	l, err := lock.TryExclusive(busy, lock.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r.removeStaleCheckpoints(p)
	for d, want := range map[string]bool{stale: false, busy: true, young: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}
