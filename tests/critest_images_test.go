package tests

import (
	"io"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// critestImage is one image critest pulls, under its upstream name.
type critestImage struct {
	names []string // upstream references (several tags of one image)
	img   v1.Image
}

// The base of critest's images: Debian's dynamic busybox (not
// busybox-static, whose sh runs applets without exec and so fools the
// masked-paths spec), its shared libraries from the host, applets as hard
// links, /etc/passwd and /etc/group like the busybox image, and the pgrep
// and ipcs that Debian's build lacks.
var (
	dynBusyboxOnce sync.Once
	dynBusyboxDir  string
	dynBusyboxErr  error
)

// debianBusybox downloads and unpacks Debian's busybox package (once per
// test binary) and returns the path of its binary.
func debianBusybox(t *testing.T) string {
	t.Helper()
	dynBusyboxOnce.Do(func() {
		dir, err := os.MkdirTemp("", "critest-busybox-")
		if err != nil {
			dynBusyboxErr = err
			return
		}
		dynBusyboxDir = dir
		// A package already in apt's cache saves the download.
		debs, _ := filepath.Glob("/var/cache/apt/archives/busybox_*.deb")
		if len(debs) != 1 {
			cmd := exec.Command("apt-get", "download", "busybox")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				dynBusyboxErr = &cmdError{"apt-get download busybox", out, err}
				return
			}
			debs, _ = filepath.Glob(filepath.Join(dir, "busybox_*.deb"))
		}
		if len(debs) != 1 {
			dynBusyboxErr = &cmdError{"apt-get download busybox", []byte("no busybox_*.deb"), nil}
			return
		}
		if out, err := exec.Command("dpkg-deb", "-x", debs[0], filepath.Join(dir, "root")).CombinedOutput(); err != nil {
			dynBusyboxErr = &cmdError{"dpkg-deb -x", out, err}
		}
	})
	if dynBusyboxErr != nil {
		t.Fatalf("cannot get Debian's dynamic busybox for critest images: %v", dynBusyboxErr)
	}
	return filepath.Join(dynBusyboxDir, "root", "bin", "busybox")
}

type cmdError struct {
	what string
	out  []byte
	err  error
}

func (e *cmdError) Error() string {
	return e.what + ": " + strings.TrimSpace(string(e.out)) + errSuffix(e.err)
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// sharedLibs returns the shared libraries (resolved files, keyed by the
// path the loader looks for) that bin needs, per ldd.
func sharedLibs(t *testing.T, bin string) map[string]string {
	t.Helper()
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bin, err)
	}
	libs := map[string]string{}
	re := regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)
	for _, line := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		real, err := filepath.EvalSymlinks(m[1])
		if err != nil {
			t.Fatalf("cannot resolve %s: %v", m[1], err)
		}
		libs[m[1]] = real
	}
	if len(libs) == 0 {
		t.Fatalf("ldd %s found no libraries: %s", bin, out)
	}
	return libs
}

// standinsBinary builds tests/critest-standins statically (once).
var (
	standinsOnce sync.Once
	standinsPath string
	standinsErr  error
)

func standins(t *testing.T) []byte {
	t.Helper()
	standinsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "critest-standins-")
		if err != nil {
			standinsErr = err
			return
		}
		standinsPath = filepath.Join(dir, "standins")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", standinsPath, "./critest-standins")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			standinsErr = &cmdError{"go build ./critest-standins", out, err}
		}
	})
	if standinsErr != nil {
		t.Fatalf("cannot build the critest stand-ins: %v", standinsErr)
	}
	b, err := os.ReadFile(standinsPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	busyboxPasswd = "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\n" +
		"bin:x:2:2:bin:/bin:/bin/false\nsys:x:3:3:sys:/dev:/bin/false\nsync:x:4:100:sync:/bin:/bin/sync\n" +
		"mail:x:8:8:mail:/var/spool/mail:/bin/false\nwww-data:x:33:33:www-data:/var/www:/bin/false\n" +
		"operator:x:37:37:Operator:/var:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
	busyboxGroup = "root:x:0:\ndaemon:x:1:\nbin:x:2:\nsys:x:3:\nadm:x:4:\ntty:x:5:\ndisk:x:6:\nlp:x:7:\n" +
		"mail:x:8:\nkmem:x:9:\nwheel:x:10:root\ncdrom:x:11:\ndialout:x:18:\nfloppy:x:19:\nvideo:x:28:\n" +
		"audio:x:29:\ntape:x:32:\nwww-data:x:33:\noperator:x:37:\nutmp:x:43:\nplugdev:x:46:\nstaff:x:50:\n" +
		"lock:x:54:\nnetdev:x:82:\nusers:x:100:\nnogroup:x:65534:\n"
)

// dynBusyboxLayer is the base layer of critest's busybox-based images.
func dynBusyboxLayer(t *testing.T) v1.Layer {
	t.Helper()
	bin := debianBusybox(t)
	body, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--list").Output()
	if err != nil {
		t.Fatalf("%s --list: %v", bin, err)
	}
	applets := strings.Fields(string(out))
	sort.Strings(applets)

	entries := []testutil.Entry{testutil.Dir("bin"), testutil.Dir("dev"), testutil.Dir("etc"),
		testutil.Dir("home"), testutil.Dir("proc"), testutil.Dir("root"), testutil.Dir("sys"),
		{Name: "tmp", Type: '5', Mode: 0o1777}, testutil.Dir("usr"), testutil.Dir("usr/bin"),
		testutil.Dir("usr/sbin"), testutil.Dir("usr/local"), testutil.Dir("usr/local/bin"),
		testutil.Dir("var"), testutil.Dir("var/run"), testutil.Dir("var/www"), testutil.Dir("lib"),
		testutil.Dir("lib64"), testutil.Dir("lib/x86_64-linux-gnu")}
	dirs := map[string]bool{}
	for _, e := range entries {
		dirs[e.Name] = true
	}
	libs := sharedLibs(t, bin)
	var libPaths []string
	for p := range libs {
		libPaths = append(libPaths, p)
	}
	sort.Strings(libPaths)
	for _, p := range libPaths {
		rel := strings.TrimPrefix(p, "/")
		for d := filepath.Dir(rel); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			entries = append(entries, testutil.Dir(d))
		}
		b, err := os.ReadFile(libs[p])
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, testutil.Entry{Name: rel, Mode: 0o755, Body: b})
	}
	entries = append(entries, testutil.Entry{Name: "bin/busybox", Mode: 0o755, Body: body})
	for _, n := range applets {
		if n != "busybox" {
			entries = append(entries, testutil.Hardlink("bin/"+n, "bin/busybox"))
		}
	}
	entries = append(entries,
		testutil.Entry{Name: "bin/.standins", Mode: 0o755, Body: standins(t)},
		testutil.Hardlink("bin/pgrep", "bin/.standins"),
		testutil.Hardlink("bin/ipcs", "bin/.standins"),
		testutil.File("etc/passwd", busyboxPasswd),
		testutil.File("etc/group", busyboxGroup),
	)
	return testutil.Layer(t, entries...)
}

// critestImages builds every image critest v1.37.0 names (except the one
// pinned to an upstream digest), deterministically.
func critestImages(t *testing.T) []critestImage {
	t.Helper()
	base := dynBusyboxLayer(t)
	sa := standins(t)
	bb := func(cfg testutil.ImageConfig, extra ...v1.Layer) v1.Image {
		if cfg.Cmd == nil && cfg.Entrypoint == nil {
			cfg.Cmd = []string{"sh"}
		}
		return testutil.Image(t, cfg, append([]v1.Layer{base}, extra...)...)
	}
	marker := func(name string) v1.Layer {
		return testutil.Layer(t, testutil.File(name, name+"\n"))
	}
	nginxLayer := testutil.Layer(t, testutil.Dir("usr"), testutil.Dir("usr/sbin"),
		testutil.Entry{Name: "usr/sbin/nginx", Mode: 0o755, Body: sa})
	const e2e = "registry.k8s.io/e2e-test-images/"
	const cri = "gcr.io/k8s-staging-cri-tools/"
	const ecr = "public.ecr.aws/docker/library/"

	predefGroup := testutil.Layer(t,
		testutil.File("etc/passwd", busyboxPasswd+"default-user:x:1000:1000::/home/default-user:/bin/sh\n"),
		testutil.File("etc/group", busyboxGroup+"default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n"),
		testutil.Dir("home/default-user"))
	pause := testutil.Image(t, testutil.ImageConfig{Entrypoint: []string{"/pause"}, User: "65535:65535", Env: []string{}},
		testutil.Layer(t, testutil.Entry{Name: "pause", Mode: 0o755, Body: sa}))

	imgs := []critestImage{
		{[]string{e2e + "busybox:1.29-2"}, bb(testutil.ImageConfig{})},
		{[]string{e2e + "nginx:1.14-2"}, bb(testutil.ImageConfig{Cmd: []string{"nginx", "-g", "daemon off;"},
			ExposedPorts: []string{"80/tcp"}}, nginxLayer)},
		{[]string{cri + "hostnet-nginx-amd64"}, bb(testutil.ImageConfig{Cmd: []string{"nginx", "-g", "daemon off;"},
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "NGINX_PORT=12003"},
			ExposedPorts: []string{"12003/tcp"}}, nginxLayer)},
		{[]string{e2e + "httpd:2.4.39-4"}, bb(testutil.ImageConfig{Cmd: []string{"/usr/local/apache2/bin/httpd"},
			ExposedPorts: []string{"80/tcp"}}, testutil.Layer(t, testutil.Dir("usr/local/apache2"),
			testutil.Dir("usr/local/apache2/bin"), testutil.Entry{Name: "usr/local/apache2/bin/httpd", Mode: 0o755, Body: sa}))},
		{[]string{e2e + "nonewprivs:1.3"}, bb(testutil.ImageConfig{Cmd: []string{"/usr/local/bin/nonewprivs"}},
			testutil.Layer(t, testutil.Entry{Name: "usr/local/bin/nonewprivs", Mode: 0o4755, Body: sa}))},
		{[]string{cri + "test-image-latest"}, bb(testutil.ImageConfig{}, marker("test-image-latest"))},
		{[]string{cri + "test-image-tag:test"}, bb(testutil.ImageConfig{}, marker("test-image-tag-test"))},
		{[]string{cri + "test-image-tag:all"}, bb(testutil.ImageConfig{}, marker("test-image-tag-all"))},
		{[]string{cri + "test-image-1:latest"}, bb(testutil.ImageConfig{}, marker("test-image-1"))},
		{[]string{cri + "test-image-2:latest"}, bb(testutil.ImageConfig{}, marker("test-image-2"))},
		{[]string{cri + "test-image-3:latest"}, bb(testutil.ImageConfig{}, marker("test-image-3"))},
		{[]string{cri + "test-image-tags:1", cri + "test-image-tags:2", cri + "test-image-tags:3"},
			bb(testutil.ImageConfig{}, marker("test-image-tags"))},
		{[]string{cri + "test-image-user-uid"}, bb(testutil.ImageConfig{User: "1002"})},
		{[]string{cri + "test-image-user-username"}, bb(testutil.ImageConfig{User: "www-data"})},
		{[]string{cri + "test-image-user-uid-group"}, bb(testutil.ImageConfig{User: "1003:1004"})},
		{[]string{cri + "test-image-user-username-group"}, bb(testutil.ImageConfig{User: "www-data:1004"})},
		{[]string{cri + "test-image-predefined-group"}, bb(testutil.ImageConfig{User: "1000"}, predefGroup)},
		{[]string{"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9"}, pause},
	}
	for _, tag := range []string{"1.35.0-glibc", "1-uclibc", "1", "1-glibc", "1-musl"} {
		imgs = append(imgs, critestImage{[]string{ecr + "busybox:" + tag},
			bb(testutil.ImageConfig{Labels: map[string]string{"io.rkt.test.variant": tag}})})
	}
	return imgs
}

// critestMirroredRegistries are the upstream registries critest's images
// come from; the tests resolve them through a loopback mirror.
var critestMirroredRegistries = []string{"registry.k8s.io", "k8s.gcr.io", "gcr.io", "public.ecr.aws"}

// pushCritestImages pushes every image to reg under its upstream
// repository path (the mirror keeps the path) and returns the number pushed.
func pushCritestImages(t *testing.T, reg *testutil.Registry, imgs []critestImage) int {
	t.Helper()
	n := 0
	for _, ci := range imgs {
		for _, name := range ci.names {
			_, repo, _ := strings.Cut(name, "/")
			if !strings.Contains(repo, ":") {
				repo += ":latest"
			}
			reg.Push(t, repo, ci.img)
			n++
		}
	}
	return n
}

// TestCritestImagesRun checks the critest base image works: unpacked to a
// directory, its dynamic busybox (applets hard-linked), pgrep and ipcs
// run in a chroot with its own PID namespace.
func TestCritestImagesRun(t *testing.T) {
	requireRoot(t)
	imgs := critestImages(t)
	root := t.TempDir()
	var nginx v1.Image
	for _, ci := range imgs {
		if ci.names[0] == "registry.k8s.io/e2e-test-images/nginx:1.14-2" {
			nginx = ci.img
		}
	}
	if nginx == nil {
		t.Fatal("no nginx image")
	}
	rc := mutateExtract(t, nginx)
	cmd := exec.Command("tar", "-x", "-C", root)
	cmd.Stdin = rc
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	out, err := exec.Command("unshare", "--mount", "--pid", "--fork", "--mount-proc="+filepath.Join(root, "proc"),
		"chroot", root, "/bin/sh", "-c",
		"echo hello; ls -i /bin/sh /bin/ls | awk '{print $1}' | uniq | wc -l; pgrep '^sh$'; pgrep nomatch; echo pgrep=$?; ipcs -m | grep -c 'Shared Memory'").CombinedOutput()
	if err != nil {
		t.Fatalf("chroot sh: %v\n%s", err, out)
	}
	want := "hello\n1\n1\npgrep=1\n1\n"
	if string(out) != want {
		t.Fatalf("chroot sh printed %q, want %q", out, want)
	}
}

// mutateExtract returns the flattened filesystem of img as a tar stream.
func mutateExtract(t *testing.T, img v1.Image) io.ReadCloser {
	t.Helper()
	return mutate.Extract(img)
}
