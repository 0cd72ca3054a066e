package schema

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The layout is an on-disk format: pods written by earlier versions are
// found at these paths.
func TestLayout(t *testing.T) {
	d := PodDir("/var/lib/rkt/pods/run/u")
	a := d.App("web")
	for _, c := range []struct{ got, want string }{
		{PodsDir("/var/lib/rkt"), "/var/lib/rkt/pods"},
		{d.Manifest(), "/var/lib/rkt/pods/run/u/pod"},
		{d.NetNS(), "/var/lib/rkt/pods/run/u/netns"},
		{d.NetInfo(), "/var/lib/rkt/pods/run/u/net-info.json"},
		{d.UserNS(), "/var/lib/rkt/pods/run/u/userns"},
		{d.Stage1PID(), "/var/lib/rkt/pods/run/u/stage1.pid"},
		{d.Stage1Socket(), "/var/lib/rkt/pods/run/u/stage1.sock"},
		{d.Stage1Log(), "/var/lib/rkt/pods/run/u/stage1.log"},
		{d.Stage1Died(), "/var/lib/rkt/pods/run/u/stage1.died"},
		{d.Cleaned(), "/var/lib/rkt/pods/run/u/stage0-cleaned"},
		{d.Volumes(), "/var/lib/rkt/pods/run/u/volumes"},
		{d.Volume("cache"), "/var/lib/rkt/pods/run/u/volumes/cache"},
		{d.AppsDir(), "/var/lib/rkt/pods/run/u/apps"},
		{d.Rkt1AppsInfo(), "/var/lib/rkt/pods/run/u/appsinfo"},
		{string(a), "/var/lib/rkt/pods/run/u/apps/web"},
		{a.Record(), "/var/lib/rkt/pods/run/u/apps/web/stage0.json"},
		{a.Spec(), "/var/lib/rkt/pods/run/u/apps/web/config.json"},
		{a.Status(), "/var/lib/rkt/pods/run/u/apps/web/status.json"},
		{a.DefaultLog(), "/var/lib/rkt/pods/run/u/apps/web/log"},
		{a.FS(), "/var/lib/rkt/pods/run/u/apps/web/fs"},
		{a.Rootfs(), "/var/lib/rkt/pods/run/u/apps/web/fs/rootfs"},
		{a.Upper(), "/var/lib/rkt/pods/run/u/apps/web/fs/upper"},
		{a.Work(), "/var/lib/rkt/pods/run/u/apps/web/fs/work"},
		{a.PreFSUpper(), "/var/lib/rkt/pods/run/u/apps/web/upper"},
		{a.Empty(), "/var/lib/rkt/pods/run/u/apps/web/fs/empty"},
		{a.IDMap(), "/var/lib/rkt/pods/run/u/apps/web/fs/idmap"},
		{a.ImageVolume(2), "/var/lib/rkt/pods/run/u/apps/web/fs/imagevols/2"},
	} {
		if c.got != c.want {
			t.Errorf("%s, want %s", c.got, c.want)
		}
	}
}

// An app listed without its directory was removed.
func TestDropRemovedApps(t *testing.T) {
	d := PodDir(t.TempDir())
	if err := os.MkdirAll(string(d.App("kept")), 0o700); err != nil {
		t.Fatal(err)
	}
	pm := &PodManifest{Apps: []App{{Name: "gone"}, {Name: "kept"}, {Name: "gone2"}}}
	if !d.DropRemovedApps(pm) || len(pm.Apps) != 1 || pm.Apps[0].Name != "kept" {
		t.Fatalf("apps %+v", pm.Apps)
	}
	if d.DropRemovedApps(pm) || len(pm.Apps) != 1 {
		t.Fatalf("second pass: %+v", pm.Apps)
	}
}

// TestIsUUID holds IsUUID to the pattern it replaces.
func TestIsUUID(t *testing.T) {
	pat := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, s := range []string{"", "a", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00", "0f1e2d3c04b5a-6978-8796-a5b4c3d2e1f0",
		"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", "x" + strings.Repeat("-", 35)} {
		if got, want := IsUUID(s), pat.MatchString(s); got != want {
			t.Errorf("IsUUID(%q) = %v, want %v", s, got, want)
		}
	}
}
