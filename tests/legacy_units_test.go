package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rkt/rkt/tests/testutil"
)

// rkt1Units are the units rkt 1.30 shipped (dist/init/systemd).
var rkt1Units = map[string]string{
	"rkt-api.service": `[Unit]
Description=rkt api service
Documentation=http://github.com/rkt/rkt
After=network.target rkt-api-tcp.socket
Requires=rkt-api-tcp.socket

[Service]
ExecStart=/usr/bin/rkt api-service

[Install]
WantedBy=multi-user.target
`,
	"rkt-api-tcp.socket": `[Unit]
Description=rkt api service socket
PartOf=rkt-api.service

[Socket]
ListenStream=127.0.0.1:15441
ListenStream=[::1]:15441
Service=rkt-api.service
BindIPv6Only=both

[Install]
WantedBy=sockets.target
`,
	"rkt-metadata.service": `[Unit]
Description=rkt metadata service
Documentation=http://github.com/rkt/rkt
After=network.target rkt-metadata.socket
Requires=rkt-metadata.socket

[Service]
ExecStart=/usr/bin/rkt metadata-service

[Install]
WantedBy=multi-user.target
`,
	"rkt-metadata.socket": `[Unit]
Description=rkt metadata service socket
PartOf=rkt-metadata.service

[Socket]
ListenStream=/run/rkt/metadata-svc.sock
SocketMode=0660
SocketUser=root
SocketGroup=root
RemoveOnStop=true

[Install]
WantedBy=sockets.target
`,
	"rkt-gc.service": `[Unit]
Description=Garbage Collection for rkt

[Service]
Environment=GRACE_PERIOD=24h
Type=oneshot
ExecStart=/usr/bin/rkt gc --grace-period=${GRACE_PERIOD}
`,
	"rkt-gc.timer": `[Unit]
Description=Periodic Garbage Collection for rkt

[Timer]
OnActiveSec=0s
OnUnitActiveSec=12h

[Install]
WantedBy=multi-user.target
`,
}

// distFile returns a file of dist/ with the package's paths substituted.
func distFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "dist", rel))
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("@BINDIR@", "/usr/bin", "@SOCKET_PATH@", "/run/rkt/kubelet-service.sock", "@SOCKET_GROUP@", "rkt",
		"@DATADIR_RKT@", "/var/lib/rkt", "@LOCAL_CONFIG@", "/etc/rkt", "@CNI_CONF_DIR@", "/etc/rkt/net.d").Replace(string(b))
}

// links lists the unit links under root's /etc/systemd/system.
func links(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.Walk(filepath.Join(root, "etc/systemd/system"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			rel, _ := filepath.Rel(filepath.Join(root, "etc/systemd/system"), p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestRKT1UpgradeUnits: dist/rkt1-upgrade on a tree where rkt 1.x's units
// were enabled and the package replaced its files (systemctl --root, no
// systemd needed) disables rkt-api and rkt-metadata for good, enables
// rkt-kubelet-service.socket, moves rkt-gc.timer to timers.target, keeps
// the groups and /etc/rkt (also through the new tmpfiles.d), imports the
// images; a second run changes nothing.
func TestRKT1UpgradeUnits(t *testing.T) {
	for _, tool := range []string{"systemctl", "systemd-tmpfiles"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	root := t.TempDir()
	unitDir := filepath.Join(root, "lib/systemd/system")
	for _, d := range []string{unitDir, filepath.Join(root, "etc/rkt/net.d"), filepath.Join(root, "etc/systemd/system")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range rkt1Units {
		if err := os.WriteFile(filepath.Join(unitDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	group := "root:x:0:\nrkt-admin:x:998:alice\nrkt:x:999:bob\n"
	os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644)
	os.Chown(filepath.Join(root, "etc/rkt"), 0, 998)
	os.Chmod(filepath.Join(root, "etc/rkt"), os.ModeSetgid|0o775)
	// rkt 1.x's package enabled its units (deb-systemd-helper does systemctl's work).
	if out, err := exec.Command("systemctl", "--root="+root, "enable", "rkt-api.service", "rkt-api-tcp.socket",
		"rkt-metadata.socket", "rkt-gc.timer").CombinedOutput(); err != nil {
		t.Fatalf("systemctl enable: %v\n%s", err, out)
	}
	n := buildRKT1Node(t, filepath.Join(root, "var/lib/rkt"))
	lock, _ := os.Open(filepath.Join(root, "var/lib/rkt/pods/run", n.running))
	lock.Close() // no pod of rkt 1.x runs in this tree
	t.Logf("rkt 1.x's links: %v", links(t, root))

	// The package replaces the files: rkt-api and rkt-metadata's go, rkt-gc's
	// and the kubelet-service's come.
	for _, u := range []string{"rkt-api.service", "rkt-api-tcp.socket", "rkt-metadata.service", "rkt-metadata.socket"} {
		os.Remove(filepath.Join(unitDir, u))
	}
	for _, u := range []string{"rkt-gc.service.in", "rkt-gc.timer", "rkt-kubelet-service.service.in", "rkt-kubelet-service.socket.in"} {
		if err := os.WriteFile(filepath.Join(unitDir, strings.TrimSuffix(u, ".in")), []byte(distFile(t, "systemd/"+u)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpfiles := filepath.Join(root, "usr/lib/tmpfiles.d/rkt.conf")
	os.MkdirAll(filepath.Dir(tmpfiles), 0o755)
	os.WriteFile(tmpfiles, []byte(distFile(t, "tmpfiles.d/rkt.conf.in")), 0o644)
	if out, err := exec.Command("systemd-tmpfiles", "--root="+root, "--create", tmpfiles).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles: %v\n%s", err, out)
	}

	upgrade := func() string {
		t.Helper()
		cmd := exec.Command("sh", filepath.Join("..", "dist", "rkt1-upgrade"), "--root="+root)
		cmd.Env = append(os.Environ(), "RKT="+testutil.RKTBin(t))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("rkt1-upgrade: %v\n%s", err, out)
		}
		return string(out)
	}
	out := upgrade()
	t.Logf("rkt1-upgrade:\n%s", out)
	for _, want := range []string{"disabled rkt-api.service", "disabled rkt-api-tcp.socket", "disabled rkt-metadata.socket",
		"enabled rkt-kubelet-service.socket", "rkt-gc.timer re-enabled", "imported " + n.keys["example.com/busybox"]} {
		if !strings.Contains(out, want) {
			t.Errorf("rkt1-upgrade does not say %q", want)
		}
	}
	got := links(t, root)
	want := []string{"sockets.target.wants/rkt-kubelet-service.socket", "timers.target.wants/rkt-gc.timer"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links after the upgrade: %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/group")); string(b) != group {
		t.Errorf("/etc/group changed: %q", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/rkt")); err != nil || fi.Mode()&os.ModePerm != 0o775 || fi.Mode()&os.ModeSetgid == 0 {
		t.Errorf("/etc/rkt of rkt 1.x (2775 root:rkt-admin) not kept: %v, %v", fi.Mode(), err)
	}
	r := exec.Command(testutil.RKTBin(t), "--dir="+filepath.Join(root, "var/lib/rkt"), "image", "list")
	if b, err := r.CombinedOutput(); err != nil || !strings.Contains(string(b), "example.com/busybox") {
		t.Errorf("images after the upgrade: %v\n%s", err, b)
	}

	// A unit left behind that runs `rkt api-service` fails once, saying why,
	// with EX_CONFIG (systemd shows status=78/CONFIG).
	c := exec.Command(testutil.RKTBin(t), "api-service")
	b, err := c.CombinedOutput()
	if c.ProcessState.ExitCode() != 78 || !strings.Contains(string(b), "kubelet-service") {
		t.Errorf("rkt api-service: %v\n%s", err, b)
	}

	// Again: nothing to do, nothing changed.
	out = upgrade()
	if strings.Contains(out, "disabled") || strings.Contains(out, "enabled rkt-kubelet") || strings.Contains(out, "imported sha512-") ||
		!strings.Contains(out, "were imported at") {
		t.Errorf("second rkt1-upgrade acted again:\n%s", out)
	}
	if again := links(t, root); strings.Join(again, " ") != strings.Join(want, " ") {
		t.Errorf("links after a second upgrade: %v", again)
	}

	// An administrator's copy of rkt-api.service in /etc is disabled and named.
	os.WriteFile(filepath.Join(root, "etc/systemd/system/rkt-api.service"), []byte(rkt1Units["rkt-api.service"]), 0o644)
	exec.Command("systemctl", "--root="+root, "enable", "rkt-api.service").Run()
	out = upgrade()
	if !strings.Contains(out, "disabled rkt-api.service") || !strings.Contains(out, "copy of rkt 1.x's unit") {
		t.Errorf("rkt1-upgrade with an admin's copy:\n%s", out)
	}
	if got := links(t, root); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links with an admin's copy: %v", got)
	}
	// The remaining rkt 1.x data leaves with the test's tree.
	exec.Command(testutil.RKTBin(t), "--dir="+filepath.Join(root, "var/lib/rkt"), "migrate", "--remove-legacy").Run()
}
