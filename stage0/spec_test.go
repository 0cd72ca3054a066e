package stage0

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/schema"
)

// fakeRootfs writes an image-like rootfs with /etc/passwd and /etc/group.
func fakeRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www:/var/www:/bin/false\nalice:x:1000:1000::/home/alice:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nwww-data:x:33:\nalice:x:1000:\nstaff:x:50:alice\nvideo:x:44:alice,bob\n"), 0o644)
	return root
}

func testInput(t *testing.T, opts AppOptions, imgCfg v1.Config) specInput {
	pm := &schema.PodManifest{UUID: "11111111-2222-4333-8444-555555555555", Net: "default", CgroupParent: "/rkt", Hostname: "web-pod",
		Volumes: []schema.Volume{{Name: "scratch", Kind: "empty"}, {Name: "host", Kind: "host", Source: "/tmp"}}}
	return specInput{
		pod: pm, podDir: "/var/lib/rkt/pods/run/" + pm.UUID, app: schema.App{Name: "web"},
		image: &Image{ID: "sha256:abc", Name: "busybox", Config: &v1.ConfigFile{Config: imgCfg}},
		opts:  opts, rootfs: fakeRootfs(t),
	}
}

func TestBuildSpecProcess(t *testing.T) {
	img := v1.Config{Entrypoint: []string{"/ep"}, Cmd: []string{"c1", "c2"}, Env: []string{"PATH=/bin", "A=img"}, WorkingDir: "/w", User: "www-data"}
	cases := []struct {
		name     string
		opts     AppOptions
		img      v1.Config
		args     []string
		env      []string
		cwd      string
		uid, gid uint32
		groups   []uint32
		wantErr  bool
	}{
		{name: "image defaults", img: img, args: []string{"/ep", "c1", "c2"}, env: []string{"HOSTNAME=web-pod", "PATH=/bin", "A=img", "HOME=/var/www"}, cwd: "/w", uid: 33, gid: 33, groups: []uint32{33}},
		{name: "args override cmd", img: img, opts: AppOptions{Args: []string{"x"}}, args: []string{"/ep", "x"}, env: []string{"HOSTNAME=web-pod", "PATH=/bin", "A=img", "HOME=/var/www"}, cwd: "/w", uid: 33, gid: 33, groups: []uint32{33}},
		{name: "exec drops entrypoint and cmd", img: img, opts: AppOptions{Exec: []string{"/bin/sh"}, Args: []string{"-c", "true"}, Env: []string{"A=opt", "B=1"}, WorkingDir: "/tmp", User: "1000"},
			args: []string{"/bin/sh", "-c", "true"}, env: []string{"HOSTNAME=web-pod", "PATH=/bin", "A=opt", "B=1", "HOME=/home/alice"}, cwd: "/tmp", uid: 1000, gid: 1000, groups: []uint32{1000, 50, 44}},
		{name: "strict groups and group override", img: img, opts: AppOptions{User: "alice", Group: "staff", StrictGroups: true, SupplementaryGroups: []uint32{7}},
			args: []string{"/ep", "c1", "c2"}, env: []string{"HOSTNAME=web-pod", "PATH=/bin", "A=img", "HOME=/home/alice"}, cwd: "/w", uid: 1000, gid: 50, groups: []uint32{50, 7}},
		{name: "numeric user not in passwd", img: v1.Config{Cmd: []string{"/x"}}, opts: AppOptions{User: "4242:4343"},
			args: []string{"/x"}, env: []string{"HOSTNAME=web-pod", "PATH=" + defaultPath, "HOME=/"}, cwd: "/", uid: 4242, gid: 4343, groups: []uint32{4343}},
		{name: "tty sets TERM", img: v1.Config{Cmd: []string{"/x"}}, opts: AppOptions{TTY: true},
			args: []string{"/x"}, env: []string{"HOSTNAME=web-pod", "PATH=" + defaultPath, "HOME=/root", "TERM=xterm"}, cwd: "/", groups: []uint32{0}},
		{name: "image sets HOSTNAME", img: v1.Config{Cmd: []string{"/x"}, Env: []string{"HOSTNAME=img"}}, opts: AppOptions{Env: []string{"B=1"}},
			args: []string{"/x"}, env: []string{"HOSTNAME=img", "B=1", "PATH=" + defaultPath, "HOME=/root"}, cwd: "/", groups: []uint32{0}},
		{name: "unknown user", img: img, opts: AppOptions{User: "nobody-here"}, wantErr: true},
		{name: "no command", img: v1.Config{}, wantErr: true},
		{name: "relative workdir", img: img, opts: AppOptions{WorkingDir: "rel"}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := buildSpec(testInput(t, c.opts, c.img))
			if c.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := s.Process
			if !reflect.DeepEqual(p.Args, c.args) || !reflect.DeepEqual(p.Env, c.env) || p.Cwd != c.cwd {
				t.Errorf("args %q env %q cwd %q; want %q %q %q", p.Args, p.Env, p.Cwd, c.args, c.env, c.cwd)
			}
			if p.User.UID != c.uid || p.User.GID != c.gid || !reflect.DeepEqual(p.User.AdditionalGids, c.groups) {
				t.Errorf("user %+v; want %d:%d %v", p.User, c.uid, c.gid, c.groups)
			}
			if p.Terminal != c.opts.TTY {
				t.Errorf("terminal %v", p.Terminal)
			}
		})
	}
}

func TestBuildSpecSecurity(t *testing.T) {
	img := v1.Config{Cmd: []string{"/x"}}
	s, err := buildSpec(testInput(t, AppOptions{}, img))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Process.Capabilities.Bounding, defaultCaps) {
		t.Errorf("default caps %v", s.Process.Capabilities.Bounding)
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction != specs.ActErrno {
		t.Errorf("no default seccomp profile: %+v", s.Linux.Seccomp)
	}
	if !reflect.DeepEqual(s.Linux.MaskedPaths, defaultMaskedPaths) || !reflect.DeepEqual(s.Linux.ReadonlyPaths, defaultReadonlyPaths) {
		t.Errorf("masked %v readonly %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	if s.Linux.CgroupsPath != "/rkt/11111111-2222-4333-8444-555555555555/web" {
		t.Errorf("cgroups path %q", s.Linux.CgroupsPath)
	}
	if s.Root.Path != "/var/lib/rkt/pods/run/11111111-2222-4333-8444-555555555555/apps/web/fs/rootfs" || s.Hostname != "" {
		t.Errorf("root %q hostname %q", s.Root.Path, s.Hostname)
	}

	priv, err := buildSpec(testInput(t, AppOptions{Privileged: true}, img))
	if err != nil {
		t.Fatal(err)
	}
	if len(priv.Process.Capabilities.Bounding) != len(knownCaps()) || priv.Linux.Seccomp != nil || priv.Linux.MaskedPaths != nil || priv.Linux.ReadonlyPaths != nil {
		t.Errorf("privileged: caps %d seccomp %v masked %v", len(priv.Process.Capabilities.Bounding), priv.Linux.Seccomp != nil, priv.Linux.MaskedPaths)
	}
	if len(priv.Linux.Devices) == 0 {
		t.Error("privileged app got no host devices")
	}
	unconf, _ := buildSpec(testInput(t, AppOptions{Seccomp: SeccompUnconfined, MaskedPaths: []string{}, ReadonlyPaths: []string{"/x"}}, img))
	if unconf.Linux.Seccomp != nil || len(unconf.Linux.MaskedPaths) != 0 || !reflect.DeepEqual(unconf.Linux.ReadonlyPaths, []string{"/x"}) {
		t.Errorf("unconfined/custom paths: %+v", unconf.Linux)
	}
	if _, err := buildSpec(testInput(t, AppOptions{Seccomp: "bogus"}, img)); err == nil {
		t.Error("unknown seccomp profile accepted")
	}
	if _, err := buildSpec(testInput(t, AppOptions{ApparmorProfile: "localhost/foo"}, img)); err == nil {
		t.Error("AppArmor profile accepted on a host without AppArmor")
	}
}

func TestCapabilities(t *testing.T) {
	cases := []struct {
		name string
		opts AppOptions
		want []string
		err  bool
	}{
		{"retain", AppOptions{CapsRetain: []string{"net_bind_service", "CAP_CHOWN"}}, []string{"CAP_NET_BIND_SERVICE", "CAP_CHOWN"}, false},
		{"drop", AppOptions{CapsDrop: []string{"CHOWN"}}, without(defaultCaps, "CAP_CHOWN"), false},
		{"add", AppOptions{CapsAdd: []string{"SYS_ADMIN"}}, append(append([]string{}, defaultCaps...), "CAP_SYS_ADMIN"), false},
		{"drop all add one", AppOptions{CapsDrop: []string{"ALL"}, CapsAdd: []string{"KILL"}}, []string{"CAP_KILL"}, false},
		{"drop all", AppOptions{CapsDrop: []string{"all"}}, []string{}, false},
		{"unknown", AppOptions{CapsAdd: []string{"CAP_FLY"}}, nil, true},
	}
	for _, c := range cases {
		got, err := capabilities(c.opts)
		if c.err {
			if err == nil {
				t.Errorf("%s: no error", c.name)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got.Effective, c.want) {
			t.Errorf("%s: got %v, %v; want %v", c.name, got.Effective, err, c.want)
		}
	}
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func TestNamespaces(t *testing.T) {
	types := func(ns []specs.LinuxNamespace) string {
		var s []string
		for _, n := range ns {
			s = append(s, string(n.Type)+"="+n.Path)
		}
		return strings.Join(s, " ")
	}
	cases := []struct {
		name string
		pod  schema.PodManifest
		opts AppOptions
		pid  int
		want string
		err  bool
	}{
		{"default", schema.PodManifest{Net: "default"}, AppOptions{}, 0, "mount= network= uts= ipc= pid=", false},
		{"host net and ipc", schema.PodManifest{Net: "host", HostIPC: true}, AppOptions{}, 0, "mount= pid=", false},
		{"host pid", schema.PodManifest{Net: "default", HostPID: true}, AppOptions{}, 0, "mount= network= uts= ipc=", false},
		{"node", schema.PodManifest{Net: "default"}, AppOptions{PIDMode: NamespaceNode}, 0, "mount= network= uts= ipc=", false},
		{"target", schema.PodManifest{Net: "default"}, AppOptions{PIDMode: NamespaceTarget, PIDTarget: "a"}, 42, "mount= network= uts= ipc= pid=/proc/42/ns/pid", false},
		{"target not running", schema.PodManifest{Net: "default"}, AppOptions{PIDMode: NamespaceTarget, PIDTarget: "a"}, 0, "", true},
		{"own in shared pod", schema.PodManifest{Net: "default", SharedPID: true}, AppOptions{PIDMode: NamespaceContainer}, 0, "", true},
	}
	for _, c := range cases {
		ns, err := namespaces(&c.pod, c.opts, c.pid)
		if c.err != (err != nil) {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if !c.err && types(ns) != c.want {
			t.Errorf("%s: %s; want %s", c.name, types(ns), c.want)
		}
	}
}

func TestMounts(t *testing.T) {
	hostDir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(hostDir, link)
	in := testInput(t, AppOptions{Mounts: []Mount{
		{Volume: "scratch", Destination: "/scratch"},
		{Volume: "host", Destination: "/host", ReadOnly: true},
		{Source: link, Destination: "/data", Propagation: "rslave", ReadOnly: true, RecursiveReadOnly: true},
		{Source: hostDir, Destination: "/etc/hosts"},
	}}, v1.Config{Cmd: []string{"/x"}})
	s, err := buildSpec(in)
	if err != nil {
		t.Fatal(err)
	}
	byDst := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		if _, dup := byDst[m.Destination]; dup {
			t.Errorf("two mounts on %s", m.Destination)
		}
		byDst[m.Destination] = m
	}
	check := func(dst, src string, opts ...string) {
		m, ok := byDst[dst]
		if !ok {
			t.Errorf("no mount on %s", dst)
			return
		}
		if src != "" && m.Source != src {
			t.Errorf("%s: source %q, want %q", dst, m.Source, src)
		}
		for _, o := range opts {
			if !contains(m.Options, o) {
				t.Errorf("%s: options %v lack %q", dst, m.Options, o)
			}
		}
	}
	check("/proc", "")
	check("/dev/shm", "")
	check("/etc/resolv.conf", in.podDir+"/resolv.conf", "rbind")
	check("/etc/hostname", in.podDir+"/hostname")
	check("/etc/hosts", hostDir) // the app's mount wins
	check("/scratch", in.podDir+"/volumes/scratch", "rbind", "rprivate")
	check("/host", "/tmp", "ro")
	check("/data", hostDir, "ro", "rro", "rslave")
	if s.Linux.RootfsPropagation != "rslave" {
		t.Errorf("rootfs propagation %q", s.Linux.RootfsPropagation)
	}
	for _, bad := range []Mount{{Volume: "nope", Destination: "/x"}, {Source: "/tmp", Destination: "rel"}, {Source: "/tmp", Destination: "/x", Propagation: "weird"}, {Source: "/does/not/exist", Destination: "/x"}} {
		in.opts.Mounts = []Mount{bad}
		if _, err := buildSpec(in); err == nil {
			t.Errorf("mount %+v accepted", bad)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRlimitsClamped(t *testing.T) {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		t.Fatal(err)
	}
	got, err := rlimits([]specs.POSIXRlimit{{Type: "nofile", Soft: cur.Max + 10, Hard: cur.Max + 10}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Type != "RLIMIT_NOFILE" || got[0].Hard != cur.Max || got[0].Soft != cur.Max {
		t.Errorf("not clamped to the hard limit %d: %+v", cur.Max, got)
	}
	if def, err := rlimits(nil); def != nil || err != nil {
		t.Errorf("none asked: %+v, %v; want none (the caller's are inherited)", def, err)
	}
	for _, bad := range [][]specs.POSIXRlimit{{{Type: "RLIMIT_BOGUS"}}, {{Type: "RLIMIT_CORE", Soft: 2, Hard: 1}}} {
		if _, err := rlimits(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestDefaultSeccompByCaps(t *testing.T) {
	allowed := func(sc *specs.LinuxSeccomp, name string) bool {
		for _, s := range sc.Syscalls {
			if s.Action == specs.ActAllow && len(s.Args) == 0 && contains(s.Names, name) {
				return true
			}
		}
		return false
	}
	plain := DefaultSeccomp(defaultCaps)
	if !allowed(plain, "read") || allowed(plain, "mount") || allowed(plain, "reboot") || allowed(plain, "clone") {
		t.Error("default profile allows what it should not, or not read")
	}
	admin := DefaultSeccomp(append(append([]string{}, defaultCaps...), "CAP_SYS_ADMIN"))
	if !allowed(admin, "mount") || !allowed(admin, "clone") {
		t.Error("CAP_SYS_ADMIN does not allow mount/clone")
	}
}

func TestProcessArgs(t *testing.T) {
	cases := []struct {
		ep, cmd, exec, args, want []string
	}{
		{[]string{"/ep"}, []string{"c"}, nil, nil, []string{"/ep", "c"}},
		{[]string{""}, []string{"c"}, nil, nil, []string{"c"}},
		{nil, []string{"c"}, nil, []string{"a"}, []string{"a"}},
		{[]string{"/ep"}, []string{"c"}, []string{"/x"}, nil, []string{"/x"}},
	}
	for _, c := range cases {
		got, err := processArgs(c.ep, c.cmd, c.exec, c.args)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("processArgs(%q,%q,%q,%q) = %q, %v; want %q", c.ep, c.cmd, c.exec, c.args, got, err, c.want)
		}
	}
	// An image's command holding a NUL byte could never be executed:
	// refused when the app is created, not when it fails to start.
	if got, err := processArgs([]string{"/ep"}, []string{"a\x00b"}, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("a NUL byte in the image's cmd: %q, %v; want ErrInvalid", got, err)
	}
}

func TestSeccompArchs(t *testing.T) {
	tests := []struct {
		goarch string
		want   []specs.Arch
	}{
		{"amd64", []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}},
		{"arm64", []specs.Arch{specs.ArchAARCH64, specs.ArchARM}},
		{"riscv64", nil},
	}
	for _, tc := range tests {
		if got := seccompArchs(tc.goarch); !slices.Equal(got, tc.want) {
			t.Errorf("seccompArchs(%s) = %v, want %v", tc.goarch, got, tc.want)
		}
	}
	if got := DefaultSeccomp(nil).Architectures; !slices.Equal(got, kernelArchs(seccompArchs(runtime.GOARCH))) {
		t.Errorf("the default profile lists %v, not this machine's architectures", got)
	}
}

// TestX32Probe: a kernel built without the x32 ABI is probed as not running
// it, and the default profile then leaves x32 out (the other ABIs stay).
func TestX32Probe(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an amd64 ABI")
	}
	cfg := kernelConfig(t)
	st, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(st), "\nSeccomp:\t0\n") {
		t.Skip("under a seccomp filter: no probe")
	}
	if !strings.Contains(cfg, "# CONFIG_X86_X32_ABI is not set") {
		t.Skip("the kernel has x32 (a boot parameter may still disable it)")
	}
	if x32Runs() {
		t.Fatal("probe: x32 runs on a kernel built without it")
	}
	want := []specs.Arch{specs.ArchX86_64, specs.ArchX86}
	if got := DefaultSeccomp(nil).Architectures; !slices.Equal(got, want) {
		t.Errorf("default profile's architectures %v, want %v", got, want)
	}
}

// kernelConfig returns the running kernel's build configuration
// (/proc/config.gz, else /boot/config-<release>), or skips the test.
func kernelConfig(t *testing.T) string {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/boot/config-" + unix.ByteSliceToString(uts.Release[:]))
	if err != nil {
		t.Skipf("no kernel config to compare with: %v", err)
	}
	return string(b)
}

// TestLocalhostSeccompHostile: a localhost profile is read only from a
// regular file (a symlink to one is followed) of bounded size; a FIFO used
// to block CreateContainer forever, a device to be read. Refusals are
// ErrInvalid (InvalidArgument).
func TestLocalhostSeccompHostile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"defaultAction":"SCMP_ACT_ERRNO"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	pad := strings.Repeat(" ", maxSeccompProfile)
	if err := os.WriteFile(big, []byte(`{"defaultAction":"SCMP_ACT_ERRNO"}`+pad), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{good, link} {
		if sc, err := seccompFor(AppOptions{Seccomp: "localhost/" + p}); err != nil || sc.DefaultAction != specs.ActErrno {
			t.Errorf("%s: got %v, %v; want the profile", p, sc, err)
		}
	}
	for _, p := range []string{fifo, "/dev/null", big, filepath.Join(dir, "missing.json")} {
		done := make(chan error, 1)
		go func() {
			_, err := seccompFor(AppOptions{Seccomp: "localhost/" + p})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: got %v, want ErrInvalid", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: still reading after 5s", p)
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			<-done
		}
	}
}

// TestGroupOverrideMergesImageGroups: with run_as_group (AppOptions.Group)
// and the Merge policy, the groups the image's /etc/group gives the user are
// kept, as containerd (WithAdditionalGIDs of the user alone) and CRI-O
// (GetUserInfo of the user alone) keep them.
func TestGroupOverrideMergesImageGroups(t *testing.T) {
	img := v1.Config{Cmd: []string{"/x"}}
	cases := []struct {
		name   string
		opts   AppOptions
		gid    uint32
		groups []uint32
	}{
		{"uid and gid", AppOptions{User: "1000", Group: "3000", SupplementaryGroups: []uint32{4000}}, 3000, []uint32{3000, 50, 44, 4000}},
		{"name and group", AppOptions{User: "alice", Group: "staff"}, 50, []uint32{50, 44}},
		{"strict", AppOptions{User: "1000", Group: "3000", SupplementaryGroups: []uint32{4000}, StrictGroups: true}, 3000, []uint32{3000, 4000}},
	}
	for _, c := range cases {
		s, err := buildSpec(testInput(t, c.opts, img))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		u := s.Process.User
		if u.UID != 1000 || u.GID != c.gid || !reflect.DeepEqual(u.AdditionalGids, c.groups) {
			t.Errorf("%s: user %+v; want 1000:%d groups %v", c.name, u, c.gid, c.groups)
		}
	}
}

// TestPrivilegedIgnoresCapDrop: a privileged container has every
// capability whatever its drop list says, as containerd (WithPrivileged
// after WithCapabilities) and CRI-O (SetupPrivileged instead of the
// capability setup) give it.
func TestPrivilegedIgnoresCapDrop(t *testing.T) {
	for _, drop := range [][]string{{"ALL"}, {"CAP_SYS_ADMIN"}} {
		got, err := capabilities(AppOptions{Privileged: true, CapsDrop: drop})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Bounding, knownCaps()) {
			t.Errorf("privileged, drop %v: caps %v; want all %d", drop, got.Bounding, len(knownCaps()))
		}
	}
}

// TestImageEnvInvalidEntries: an image Env entry without '=' (or with an
// empty name) is not passed on: libcontainer refuses such an environment
// and the container would never start; containerd treats "KEY" as unset
// and CRI-O skips it.
func TestImageEnvInvalidEntries(t *testing.T) {
	img := v1.Config{Cmd: []string{"/x"}, Env: []string{"PATH=/bin", "JUNK", "=nokey", "HOSTNAME", "A=1", "NUL=a\x00b"}}
	s, err := buildSpec(testInput(t, AppOptions{}, img))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range s.Process.Env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.ContainsRune(kv, 0) {
			t.Errorf("env %q has entry %q that libcontainer refuses", s.Process.Env, kv)
		}
	}
	if !slices.Contains(s.Process.Env, "A=1") || !slices.Contains(s.Process.Env, "PATH=/bin") {
		t.Errorf("env %q lost valid entries", s.Process.Env)
	}
}

// TestReadonlyRootfsEtcFiles: with a read-only rootfs the pod's /etc/hosts,
// /etc/hostname and /etc/resolv.conf are mounted read-only too, as
// containerd mounts them (Readonly: readonly_rootfs): they are shared by
// every app of the pod, and an app that asked for a read-only root could
// otherwise rewrite its siblings' resolver.
func TestReadonlyRootfsEtcFiles(t *testing.T) {
	for _, ro := range []bool{false, true} {
		s, err := buildSpec(testInput(t, AppOptions{ReadonlyRootfs: ro}, v1.Config{Cmd: []string{"/x"}}))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.Mounts {
			switch m.Destination {
			case "/etc/hosts", "/etc/hostname", "/etc/resolv.conf":
				if contains(m.Options, "ro") != ro {
					t.Errorf("readonly rootfs %v: %s options %v", ro, m.Destination, m.Options)
				}
			}
		}
	}
}

// TestMountsParentFirst: an app's mounts are made parent first, whatever
// their order in the request (containerd and CRI-O sort the CRI mounts by
// the number of path components): a volume at /data/sub listed before one
// at /data was hidden under it, and a volume at /etc hid the pod's
// /etc/hosts, /etc/hostname and /etc/resolv.conf.
func TestMountsParentFirst(t *testing.T) {
	sub, top := t.TempDir(), t.TempDir()
	s, err := buildSpec(testInput(t, AppOptions{Mounts: []Mount{
		{Source: sub, Destination: "/data/sub"},
		{Source: top, Destination: "/data"},
		{Source: top, Destination: "/etc"},
	}}, v1.Config{Cmd: []string{"/x"}}))
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, m := range s.Mounts {
		at[m.Destination] = i
	}
	if at["/data"] > at["/data/sub"] {
		t.Errorf("/data is mounted after /data/sub and hides it: %v", s.Mounts)
	}
	// a volume on /etc does not hide the pod's /etc/hosts
	if at["/etc"] > at["/etc/hosts"] {
		t.Errorf("/etc is mounted after /etc/hosts and hides it: %v", s.Mounts)
	}
}

// The apps of a pod bind its /dev/shm (they share its IPC namespace); a
// pod of an earlier version gives each a tmpfs, and a host-IPC pod the
// host's.
func TestDevShmOfPod(t *testing.T) {
	for _, tc := range []struct {
		name         string
		shared, host bool
		want         string // the mount's source
	}{
		{"shared", true, false, "shm-of-pod"},
		{"earlier pod", false, false, "shm"},
		{"host IPC", false, true, "/dev/shm"},
	} {
		in := testInput(t, AppOptions{}, v1.Config{Cmd: []string{"/x"}})
		in.pod.SharedShm, in.pod.HostIPC = tc.shared, tc.host
		s, err := buildSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want
		if want == "shm-of-pod" {
			want = schema.PodDir(in.podDir).Shm()
		}
		for _, m := range s.Mounts {
			if m.Destination == "/dev/shm" && m.Source != want {
				t.Errorf("%s: /dev/shm from %q (%s), want %q", tc.name, m.Source, m.Type, want)
			}
		}
	}
}
