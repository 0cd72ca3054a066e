package testutil

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// VictimFile is the file PrepareVictim puts in a victim dir, and its content.
const (
	VictimFile    = "existing"
	VictimContent = "victim content\n"
)

// HostileCase is a layer a safe store must refuse without writing anything
// outside its trees.
type HostileCase struct {
	Name  string
	Layer v1.Layer
	// MustRefuse is set for corrupt input. Path attacks may instead be
	// contained (the entry lands inside the tree, as tar -C does with
	// absolute names); either way nothing may land outside.
	MustRefuse bool
}

// PrepareVictim creates dir with one file (VictimFile) that hostile layers
// aim at; CheckVictim later asserts nothing there changed.
func PrepareVictim(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, VictimFile), []byte(VictimContent), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CheckVictim fails the test if the victim dir gained, lost or changed an
// entry, or if its file gained a hard link.
func CheckVictim(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("victim dir: %v", err)
	}
	if len(entries) != 1 || entries[0].Name() != VictimFile {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("victim dir %s was written to: %v", dir, names)
	}
	p := filepath.Join(dir, VictimFile)
	b, err := os.ReadFile(p)
	if err != nil || string(b) != VictimContent {
		t.Errorf("victim file %s changed: %q, %v", p, b, err)
	}
	if fi, err := os.Lstat(p); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
			t.Errorf("victim file %s got a hard link (nlink %d)", p, st.Nlink)
		}
	}
}

// HostileLayers returns layers that try to escape their tree towards
// victimDir (an absolute path) or that are corrupt: `..` paths, absolute
// paths, symlink escapes, hardlink escapes, whiteouts aimed outside, a
// corrupt and a truncated gzip, a truncated tar, a blob larger than its
// declared size and a layer whose content does not match its diff ID.
func HostileLayers(t testing.TB, victimDir string) []HostileCase {
	t.Helper()
	rel := strings.Repeat("../", 24) + strings.TrimPrefix(victimDir, "/")
	victimFile := filepath.Join(victimDir, VictimFile)
	good, err := TarBytes(File("ok/a", strings.Repeat("data ", 4000)), File("ok/b", "b"))
	if err != nil {
		t.Fatal(err)
	}
	gz := Gzip(good)
	corrupt := append([]byte(nil), gz...)
	for i := 20; i < len(corrupt)-20; i += 7 {
		corrupt[i] ^= 0x5a
	}
	cases := []HostileCase{
		{"dotdot", Layer(t, File("ok", "x"), File(rel+"/dotdot", "pwned")), false},
		{"absolute", Layer(t, File(victimDir+"/absolute", "pwned")), false},
		{"symlink-escape", Layer(t, Symlink("esc", victimDir), File("esc/via-symlink", "pwned")), false},
		{"symlink-escape-relative", Layer(t, Symlink("up", strings.Repeat("../", 24)), File("up/"+strings.TrimPrefix(victimDir, "/")+"/via-rel-symlink", "pwned")), false},
		{"symlink-parent-chain", Layer(t, Dir("a"), Symlink("a/b", "../.."), Symlink("c", "a/b/"+strings.Repeat("../", 22)+strings.TrimPrefix(victimDir, "/")), File("c/via-chain", "pwned")), false},
		{"hardlink-escape", Layer(t, Hardlink("hl", rel+"/"+VictimFile)), false},
		{"hardlink-absolute", Layer(t, Hardlink("hl", victimFile)), false},
		{"hardlink-via-symlink", Layer(t, Symlink("s", victimDir), Hardlink("h", "s/"+VictimFile)), false},
		{"whiteout-dotdot", Layer(t, File("ok", "x"), Whiteout(rel+"/"+VictimFile)), false},
		{"whiteout-via-symlink", Layer(t, Symlink("w", victimDir), Whiteout("w/"+VictimFile)), false},
		{"opaque-via-symlink", Layer(t, Symlink("o", victimDir), OpaqueWhiteout("o")), false},
		{"corrupt-gzip", RawLayer(corrupt, good, int64(len(corrupt))), true},
		{"truncated-gzip", RawLayer(gz[:len(gz)/2], good, int64(len(gz)/2)), true},
		{"truncated-tar", LayerFromTar(t, good[:len(good)/2]), true},
		{"oversize-blob", RawLayer(gz, good, int64(len(gz)-100)), true},
		{"diffid-mismatch", RawLayer(gz, append(append([]byte(nil), good...), 0), int64(len(gz))), true},
	}
	return cases
}

// RawLayer is a layer whose compressed bytes, uncompressed content (used
// only for its diff ID) and declared size are given as they are, so tests
// can serve blobs that lie about themselves.
func RawLayer(blob, uncompressed []byte, size int64) v1.Layer {
	return &rawLayer{blob: blob, diffID: sha(uncompressed), size: size}
}

type rawLayer struct {
	blob   []byte
	diffID v1.Hash
	size   int64
}

func sha(b []byte) v1.Hash {
	s := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(s[:])}
}

func (l *rawLayer) Digest() (v1.Hash, error) { return sha(l.blob), nil }
func (l *rawLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }
func (l *rawLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.blob)), nil
}
func (l *rawLayer) Uncompressed() (io.ReadCloser, error) {
	zr, err := gzip.NewReader(bytes.NewReader(l.blob))
	if err != nil {
		return nil, err
	}
	return zr, nil
}
func (l *rawLayer) Size() (int64, error)                { return l.size, nil }
func (l *rawLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
