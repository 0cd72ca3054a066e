package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// legacyACI writes an ACI of name into dataDir's rkt 1.x store, at its key
// (the first half of its SHA-512), or at a key that does not match its
// content when tampered (an ACI changed since rkt 1.x stored it).
func legacyACI(t *testing.T, dataDir, name string, tampered bool) string {
	t.Helper()
	m, err := json.Marshal(map[string]any{"acKind": "ImageManifest", "acVersion": "0.8.11", "name": name,
		"app": map[string]any{"exec": []string{"/bin/true"}, "user": "0", "group": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "manifest", Mode: 0o600, Size: int64(len(m)), Typeflag: tar.TypeReg},
		{Name: "rootfs/", Mode: 0o700, Typeflag: tar.TypeDir},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest" {
			tw.Write(m)
		}
	}
	tw.Close()
	b := buf.Bytes()
	sum := sha512.Sum512(b)
	if tampered {
		sum = sha512.Sum512(append([]byte("not "), b...))
	}
	key := "sha512-" + hex.EncodeToString(sum[:])[:64]
	dir := filepath.Join(dataDir, "cas", "blob", "sha512", key[7:9])
	if err := os.MkdirAll(dir, 0o2770); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, key)
	if err := os.WriteFile(p, b, 0o660); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMigrateOnceRemoveLegacyKeepsFailedImages: an ACI that failed to
// import keeps --remove-legacy from deleting anything (upgrading.md), also
// when --once skips the import because the package's upgrade step ran it.
func TestMigrateOnceRemoveLegacyKeepsFailedImages(t *testing.T) {
	saved := globals
	t.Cleanup(func() { globals = saved })
	globals.Dir = t.TempDir()
	globals.SystemConfig, globals.LocalConfig = t.TempDir(), t.TempDir()
	good := legacyACI(t, globals.Dir, "example.com/good", false)
	bad := legacyACI(t, globals.Dir, "example.com/changed", true)
	ctx := context.Background()

	// the package's upgrade step: `rkt migrate --once`, one ACI fails
	err := runMigrate(ctx, io.Discard, migrateFlags{once: true})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("first import with a changed ACI: %v, want exit status 1", err)
	}
	// as documented: --remove-legacy removes nothing while an image failed
	if err := runMigrate(ctx, io.Discard, migrateFlags{remove: true}); err == nil {
		t.Fatal("migrate --remove-legacy succeeded with an ACI that failed to import")
	}
	for _, p := range []string{good, bad} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("migrate --remove-legacy removed %s: %v", p, err)
		}
	}
	// the same with --once
	err = runMigrate(ctx, io.Discard, migrateFlags{once: true, remove: true})
	if err == nil {
		t.Error("migrate --once --remove-legacy succeeded with an ACI that failed to import")
	}
	if _, err := os.Stat(bad); err != nil {
		t.Errorf("migrate --once --remove-legacy deleted the ACI that was never imported: %v", err)
	}
}
