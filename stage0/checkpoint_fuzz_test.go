package stage0

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rkt/rkt/pkg/schema"
)

// FuzzReadCheckpoint feeds ReadCheckpoint manifests (a checkpoint comes
// from outside: CheckpointContainer's archive, extracted by a user) in a
// directory with the files of an app "web": no panic; an accepted one has
// valid app names whose files are regular files inside the directory.
func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte(`{"version":1,"pod":{"apps":[{"name":"web"}]},"apps":[{"name":"web","args":["sh"]}]}`))
	f.Add([]byte(`{"version":2,"pod":{"apps":[{"name":"web"}]},"apps":[{"name":"web"}]}`))
	f.Add([]byte(`{"version":1,"pod":{"apps":[{"name":"../web"}]},"apps":[{"name":"../web"}]}`))
	f.Add([]byte(`{"version":1,"pod":{"apps":[]},"apps":[{"name":"web"}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"version":2,"pod":{"apps":[{"name":"web"}]},"apps":[{"name":"web"}]}`))
	f.Add([]byte(`{"version":2,"pod":{"apps":[{"name":"web"},{"name":"db"}]},"apps":[{"name":"web"},{"name":"db"}]}`))
	dir := f.TempDir()
	for _, p := range []string{"web/criu/inventory.img", "web/rootfs.tar", "checkpoint/inventory.img", "rootfs-diff.tar"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o700); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o600); err != nil {
			f.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, CheckpointManifestFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(manifest, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cm, err := ReadCheckpoint(dir)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, schema.ErrNewerVersion) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		if len(cm.Apps) == 0 || len(cm.Apps) != len(cm.Pod.Apps) || cm.Version == ContainerCheckpointVersion && len(cm.Apps) != 1 {
			t.Fatalf("accepted %d apps, %d in the pod", len(cm.Apps), len(cm.Pod.Apps))
		}
		for i, a := range cm.Apps {
			if !validAppName(a.Name) || a.Name != cm.Pod.Apps[i].Name || strings.Contains(a.Name, "/") {
				t.Fatalf("accepted app name %q (pod's %q)", a.Name, cm.Pod.Apps[i].Name)
			}
			files := cm.Files(dir, a.Name)
			if fi, err := os.Lstat(files.Layer); err != nil || !fi.Mode().IsRegular() || !strings.HasPrefix(files.Criu, dir+"/") {
				t.Fatalf("accepted app %q without its layer, or with files outside the checkpoint (%v)", a.Name, files)
			}
		}
	})
}
