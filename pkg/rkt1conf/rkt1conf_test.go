package rkt1conf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/confdir"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDataDir(t *testing.T) {
	sys, local := t.TempDir(), t.TempDir()
	if d, err := DataDir(sys, local, ""); err != nil || d != "" {
		t.Fatalf("no paths.d: %q, %v", d, err)
	}
	write(t, filepath.Join(sys, "paths.d/paths.json"), `{"rktKind":"paths","rktVersion":"v1","data":"/var/lib/vendor-rkt"}`)
	write(t, filepath.Join(local, "paths.d/paths.json"), `{"rktKind":"paths","rktVersion":"v1","data":"/srv/rkt","stage1-images":"/srv/stage1"}`)
	write(t, filepath.Join(local, "paths.d/README"), `not json`)
	if d, err := DataDir(sys, local); err != nil || d != "/srv/rkt" {
		t.Errorf("local over system: %q, %v", d, err)
	}
	write(t, filepath.Join(local, "paths.d/other.json"), `{"rktKind":"paths","rktVersion":"v1","data":"/srv/other"}`)
	if _, err := DataDir(sys, local); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("two data dirs in one directory: %v", err)
	}
	for _, bad := range []string{`{"rktKind":"paths","rktVersion":"v1","data":"rel"}`, `{"rktKind":"stage1","rktVersion":"v1"}`, `{`} {
		d := t.TempDir()
		write(t, filepath.Join(d, "paths.d/p.json"), bad)
		if _, err := DataDir(d); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestUnused(t *testing.T) {
	d := t.TempDir()
	if u := Unused(d); len(u) != 0 {
		t.Fatalf("empty dir: %v", u)
	}
	write(t, filepath.Join(d, "stage1.d/coreos.json"), `{"rktKind":"stage1","rktVersion":"v1","name":"coreos.com/rkt/stage1-coreos","version":"1.30.0","location":"/usr/lib/rkt/stage1-images/stage1-coreos.aci"}`)
	write(t, filepath.Join(d, "trustedkeys/prefix.d/coreos.com/rkt/8b86de38890ddb7291867b025210bd8888182190"), "key")
	write(t, filepath.Join(d, "paths.d/p.json"), `{"rktKind":"paths","rktVersion":"v1","stage1-images":"/srv/stage1"}`)
	write(t, filepath.Join(d, "auth.d/aci.json"), `{"rktKind":"auth","rktVersion":"v1","domains":["example.com"],"type":"basic","credentials":{"user":"u","password":"p"}}`)
	write(t, filepath.Join(d, "auth.d/docker.json"), `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["quay.io"],"credentials":{"user":"u","password":"p"}}`)
	u := Unused(d)
	if len(u) != 4 {
		t.Fatalf("notices %q, want 4", u)
	}
	for i, want := range []string{"stage1.d", "trustedkeys", "stage1-images", "aci.json"} {
		if !strings.Contains(u[i], want) {
			t.Errorf("notice %d = %q, want it to name %s", i, u[i], want)
		}
	}
}

// TestDataDirRefusesNonFiles: a FIFO in paths.d is refused at once (every
// rkt command reads paths.d first: it would block them all).
func TestDataDirRefusesNonFiles(t *testing.T) {
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, PathsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(d, PathsDir, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := DataDir(d); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, confdir.ErrNotRegular) {
			t.Errorf("DataDir: %v, want ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DataDir blocks on a FIFO in paths.d")
	}
	if u := Unused(d); len(u) != 0 {
		t.Errorf("notices %q", u)
	}
}
