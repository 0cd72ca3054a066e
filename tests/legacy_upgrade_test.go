package tests

import (
	"archive/tar"
	"crypto/sha256"
	"crypto/sha512"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"modernc.org/ql"

	"github.com/rkt/rkt/tests/testutil"
)

// rkt1Node is a data directory laid out as rkt 1.30 left it.
type rkt1Node struct {
	dir     string
	keys    map[string]string // ACI name -> blob key
	pods    map[string]string // pod UUID -> state directory
	running string            // the UUID of the pod "running" (locked)
}

// aciEntries prefixes the entries of a rootfs with rootfs/ and puts the
// manifest first, as actool builds an ACI.
func aciEntries(t *testing.T, manifest map[string]any, rootfs []testutil.Entry) []byte {
	t.Helper()
	m, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	entries := []testutil.Entry{testutil.File("manifest", string(m)), testutil.Dir("rootfs")}
	for _, e := range rootfs {
		e.Name = "rootfs/" + e.Name
		if e.Type == tar.TypeLink {
			e.Linkname = "rootfs/" + e.Linkname
		}
		entries = append(entries, e)
	}
	b, err := testutil.TarBytes(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func aciLabels(version string) []map[string]string {
	return []map[string]string{{"name": "version", "value": version}, {"name": "os", "value": "linux"}, {"name": "arch", "value": "amd64"}}
}

// buildRKT1Node writes, in dir, rkt 1.x's layout (dist/init/systemd/
// tmpfiles.d/rkt.conf of rkt 1.30): its ql index at version 7 with the
// images, sha512 ACI blobs and their manifests, a rendered tree, and pods
// in each state directory.
func buildRKT1Node(t *testing.T, dir string) *rkt1Node {
	t.Helper()
	n := &rkt1Node{dir: dir, keys: map[string]string{}, pods: map[string]string{}}
	for _, d := range []string{"tmp", "cas/db", "cas/imagelocks", "cas/imageManifest", "cas/blob", "cas/tmp", "cas/tree",
		"cas/treestorelocks", "locks", "pods/embryo", "pods/prepare", "pods/prepared", "pods/run", "pods/exited-garbage", "pods/garbage"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o2770); err != nil {
			t.Fatal(err)
		}
	}
	busybox := map[string]any{
		"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "example.com/busybox", "labels": aciLabels("1.36"),
		"app": map[string]any{"exec": []string{"/bin/sh", "-c", "echo hello from rkt 1.x; cat /etc/motd"}, "user": "0", "group": "0",
			"environment": []map[string]string{{"name": "PATH", "value": "/bin"}}},
	}
	app := map[string]any{
		"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "example.com/motd", "labels": aciLabels("2"),
		"app": map[string]any{"exec": []string{"/bin/cat", "/etc/motd"}, "user": "0", "group": "0"},
	}
	stage1 := map[string]any{"acKind": "ImageManifest", "acVersion": "0.8.11", "name": "coreos.com/rkt/stage1-coreos", "labels": aciLabels("1.30.0")}
	acis := []struct {
		name     string
		manifest map[string]any
		rootfs   []testutil.Entry
	}{
		{"example.com/busybox", busybox, append(testutil.BusyboxEntries(t), testutil.File("etc/motd", "motd of busybox\n"))},
		{"example.com/motd", app, []testutil.Entry{testutil.Dir("etc"), testutil.File("etc/motd", "motd of the app layer\n")}},
		{"coreos.com/rkt/stage1-coreos", stage1, []testutil.Entry{testutil.Dir("usr"), testutil.File("usr/lib/os-release", "ID=coreos\n")}},
	}
	for _, a := range acis {
		if a.name == "example.com/motd" {
			a.manifest["dependencies"] = []map[string]any{{"imageName": "example.com/busybox", "imageID": n.keys["example.com/busybox"]}}
		}
		n.keys[a.name] = putRKT1ACI(t, dir, a.manifest, a.rootfs)
	}
	// A rendered tree of the busybox image, as rkt 1.x's treestore keeps it.
	tree := filepath.Join(dir, "cas/tree/deps-"+n.keys["example.com/busybox"])
	os.MkdirAll(filepath.Join(tree, "rootfs/etc"), 0o755)
	os.WriteFile(filepath.Join(tree, "rootfs/etc/motd"), []byte("motd of busybox\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "manifest"), mustJSON(t, busybox), 0o644)
	old := time.Now().Add(-72 * time.Hour)
	os.Chtimes(tree, old, old)
	writeQLIndex(t, filepath.Join(dir, "cas/db/ql.db"), n.keys)

	// Pods: exited, collected, prepared, preparing (embryo), and running.
	for i, state := range []string{"run", "exited-garbage", "prepared", "embryo", "run"} {
		uuid := fmt.Sprintf("3b2c1d7e-0000-4000-8000-00000000000%d", i)
		n.pods[uuid] = state
		p := filepath.Join(dir, "pods", state, uuid)
		for _, d := range []string{"appsinfo/busybox", "stage1/rootfs/opt/stage2/busybox/rootfs", "netinfo"} {
			os.MkdirAll(filepath.Join(p, d), 0o750)
		}
		pm := map[string]any{"acKind": "PodManifest", "acVersion": "1.30.0", "annotations": []any{}, "ports": []any{}, "volumes": []any{},
			"apps": []map[string]any{{"name": "busybox", "image": map[string]any{"name": "example.com/busybox", "id": n.keys["example.com/busybox"], "labels": aciLabels("1.36")}, "app": busybox["app"]}}}
		os.WriteFile(filepath.Join(p, "pod"), mustJSON(t, pm), 0o640)
		os.WriteFile(filepath.Join(p, "appsinfo/busybox/treeStoreID"), []byte("deps-"+n.keys["example.com/busybox"]), 0o640)
		os.WriteFile(filepath.Join(p, "pid"), []byte("4242"), 0o640)
		os.WriteFile(filepath.Join(p, "stage1TreeStoreID"), []byte("deps-"+n.keys["coreos.com/rkt/stage1-coreos"]), 0o640)
		n.running = uuid
	}
	return n
}

// putRKT1ACI stores an ACI as rkt 1.x's store did: the tar under its key
// (half a SHA-512) in cas/blob, its manifest in cas/imageManifest.
func putRKT1ACI(t *testing.T, dir string, manifest map[string]any, rootfs []testutil.Entry) string {
	t.Helper()
	b := aciEntries(t, manifest, rootfs)
	sum := sha512.Sum512(b)
	key := "sha512-" + hex.EncodeToString(sum[:])[:64]
	for store, body := range map[string][]byte{"blob": b, "imageManifest": mustJSON(t, manifest)} {
		p := filepath.Join(dir, "cas", store, "sha512", key[7:9], key)
		if err := os.MkdirAll(filepath.Dir(p), 0o2770); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o660); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeQLIndex creates rkt 1.x's image index (schema version 7 of its
// store/imagestore) with one aciinfo row per ACI and a remote row.
func writeQLIndex(t *testing.T, path string, keys map[string]string) {
	t.Helper()
	ql.RegisterDriver() // once, whoever calls
	db, err := sql.Open("ql", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, s := range []struct {
		q    string
		args []any
	}{
		{"CREATE TABLE IF NOT EXISTS version (version int);", nil},
		{"INSERT INTO version VALUES (7)", nil},
		{"CREATE TABLE IF NOT EXISTS remote (aciurl string, sigurl string, etag string, blobkey string, cachemaxage int, downloadtime time);", nil},
		{"CREATE UNIQUE INDEX IF NOT EXISTS aciurlidx ON remote (aciurl)", nil},
		{"CREATE TABLE IF NOT EXISTS aciinfo (blobkey string, name string, importtime time, lastused time, latest bool, size int64 DEFAULT 0, treestoresize int64 DEFAULT 0);", nil},
		{"CREATE UNIQUE INDEX IF NOT EXISTS blobkeyidx ON aciinfo (blobkey)", nil},
		{"CREATE INDEX IF NOT EXISTS nameidx ON aciinfo (name)", nil},
		{"INSERT INTO remote VALUES ($1, $2, $3, $4, $5, $6)", []any{"https://example.com/busybox-1.36.aci", "https://example.com/busybox-1.36.aci.asc", "", keys["example.com/busybox"], 0, now}},
	} {
		if _, err := tx.Exec(s.q, s.args...); err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
	}
	for name, key := range keys {
		if _, err := tx.Exec("INSERT INTO aciinfo (blobkey, name, importtime, lastused, latest, size, treestoresize) VALUES ($1, $2, $3, $4, $5, $6, $7)",
			key, name, now, now, true, int64(1000), int64(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// readQLIndex returns the aciinfo rows (blobkey -> name) of a ql index.
func readQLIndex(t *testing.T, path string) map[string]string {
	t.Helper()
	ql.RegisterDriver() // once, whoever calls
	db, err := sql.Open("ql", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT blobkey, name FROM aciinfo")
	if err != nil {
		t.Fatalf("rkt 1.x's index cannot be read: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, n string
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// snapshot hashes every file of rkt 1.x's layout (not this rkt's store).
func (n *rkt1Node) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range []string{"cas/db/ql.db", "cas/blob", "cas/imageManifest", "cas/tree", "pods", "locks", "tmp"} {
		filepath.WalkDir(filepath.Join(n.dir, root), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() && root != "cas/tree" {
				return nil
			}
			rel, _ := filepath.Rel(n.dir, p)
			if root == "cas/tree" && !strings.HasPrefix(rel, "cas/tree/deps-") {
				return nil // this rkt's trees
			}
			if d.IsDir() {
				out[rel] = "dir"
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
			return nil
		})
	}
	return out
}

func (n *rkt1Node) checkIntact(t *testing.T, before map[string]string, after string) {
	t.Helper()
	now := n.snapshot(t)
	for p, h := range before {
		if now[p] != h {
			t.Errorf("after %s: rkt 1.x's %s changed or is gone", after, p)
		}
	}
}

// TestLegacyUpgrade: on a data directory rkt 1.x left, this rkt lists
// nothing wrong and fails nothing, collects nothing of rkt 1.x, imports
// its ACIs with `rkt migrate` (runnable, the same IDs when run again),
// leaves rkt 1.x's files byte for byte and its ql index readable, and
// `rkt migrate --remove-legacy` deletes them only once no pod of rkt 1.x
// runs.
func TestLegacyUpgrade(t *testing.T) {
	env := testutil.NewEnv(t)
	n := buildRKT1Node(t, env.DataDir)
	lock, err := os.Open(filepath.Join(env.DataDir, "pods", "run", n.running))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil { // held as rkt 1.x holds a running pod's
		t.Fatal(err)
	}
	before := n.snapshot(t)
	index := readQLIndex(t, filepath.Join(env.DataDir, "cas/db/ql.db"))

	// Before the migration: nothing is misread, nothing of rkt 1.x is listed or collected.
	r := env.RunOK("list", "--format=json")
	if strings.TrimSpace(r.Stdout) != "[]" || !strings.Contains(r.Stderr, "pods of rkt 1.x") {
		t.Errorf("rkt list on a rkt 1.x node: %s", r)
	}
	r = env.RunOK("image", "list")
	if !strings.Contains(r.Stderr, "rkt migrate") {
		t.Errorf("rkt image list does not point at rkt migrate: %s", r)
	}
	for uuid := range n.pods {
		if r := env.RunFail("status", uuid); !strings.Contains(r.Stderr, "rkt 1.x") {
			t.Errorf("rkt status of a rkt 1.x pod: %s", r)
		}
	}
	env.RunOK("gc", "--grace-period=0s", "--expire-prepared=0s")
	env.RunOK("image", "gc", "--grace-period=0s")
	n.checkIntact(t, before, "gc")

	r = env.RunOK("migrate", "--dry-run")
	if len(env.ListImages()) != 0 || !strings.Contains(r.Stdout, n.keys["example.com/busybox"]) {
		t.Errorf("rkt migrate --dry-run: %s", r)
	}

	r = env.RunOK("migrate")
	t.Logf("%s", r.Stdout)
	for _, want := range []string{"imported " + n.keys["example.com/busybox"], "imported " + n.keys["example.com/motd"],
		"skipped  " + n.keys["coreos.com/rkt/stage1-coreos"], n.running + " (run, running)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("rkt migrate does not say %q: %s", want, r)
		}
	}
	n.checkIntact(t, before, "rkt migrate")
	if got := readQLIndex(t, filepath.Join(env.DataDir, "cas/db/ql.db")); len(got) != 3 || !mapsEqual(got, index) {
		t.Errorf("rkt 1.x's index after the migration: %v, was %v", got, index)
	}
	ids := map[string]string{}
	for _, img := range env.ListImages() {
		for _, name := range img.Names {
			ids[name] = img.ID
		}
	}
	if len(ids) != 2 || ids["example.com/busybox:1.36"] == "" || ids["example.com/motd:2"] == "" {
		t.Fatalf("images after the migration: %v", ids)
	}
	if r := env.RunOK("image", "list"); strings.Contains(r.Stderr, "rkt migrate") {
		t.Errorf("rkt image list still asks for the migration: %s", r)
	}

	// The CRI lists none of rkt 1.x's pods, the imported images, and runs them.
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	ctx := rpcCtx(t)
	if l, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil || len(l.Items) != 0 {
		t.Errorf("ListPodSandbox on a rkt 1.x node: %v, %v", l, err)
	}
	il, err := c.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(il.Images) != 2 {
		t.Errorf("ListImages after the migration: %v, %v", il, err)
	}
	if !strings.Contains(svc.Log(), "data of rkt 1.x found") {
		t.Errorf("the service does not log rkt 1.x's data:\n%s", svc.Log())
	}
	logDir := filepath.Join(env.Root, "cri-logs")
	os.MkdirAll(logDir, 0o755)
	runPodWithContainer(t, c, "imported", "example.com/busybox:1.36", logDir)
	removeAllPods(t, c)
	svc.stop()

	// The imported images run: the ACI's exec, the dependency's files below the app's.
	r = env.RunOK("run", "--net=none", "example.com/busybox:1.36")
	if !strings.Contains(r.Stdout, "hello from rkt 1.x") || !strings.Contains(r.Stdout, "motd of busybox") {
		t.Errorf("run of the imported busybox: %s", r)
	}
	r = env.RunOK("run", "--net=none", "example.com/motd:2")
	if strings.TrimSpace(r.Stdout) != "motd of the app layer" {
		t.Errorf("run of the imported app: %s", r)
	}

	// Again: the same images.
	env.RunOK("migrate")
	for _, img := range env.ListImages() {
		for _, name := range img.Names {
			if ids[name] != img.ID {
				t.Errorf("second migration: %s is %s, was %s", name, img.ID, ids[name])
			}
		}
	}
	n.checkIntact(t, before, "a second rkt migrate")

	// Removal waits for rkt 1.x's running pod.
	r = env.RunFail("migrate", "--remove-legacy")
	if !strings.Contains(r.Stderr, n.running) {
		t.Errorf("rkt migrate --remove-legacy with a running rkt 1.x pod: %s", r)
	}
	n.checkIntact(t, before, "a refused removal")
	lock.Close()
	r = env.RunOK("migrate", "--remove-legacy")
	if !strings.Contains(r.Stdout, "removed") {
		t.Errorf("rkt migrate --remove-legacy: %s", r)
	}
	for p := range before {
		if _, err := os.Stat(filepath.Join(env.DataDir, p)); err == nil && (strings.HasPrefix(p, "cas/") || strings.HasPrefix(p, "pods/")) {
			t.Errorf("%s left after --remove-legacy", p)
		}
	}
	if r := env.RunOK("migrate"); !strings.Contains(r.Stdout, "no data of rkt 1.x") {
		t.Errorf("rkt migrate after the removal: %s", r)
	}
	if r := env.RunOK("list"); strings.Contains(r.Stderr, "rkt 1.x") {
		t.Errorf("rkt list after the removal: %s", r)
	}
	// What was imported is this rkt's and stays.
	if len(env.ListImages()) != 2 {
		t.Errorf("images after the removal: %v", env.ListImages())
	}
	r = env.RunOK("run", "--net=none", "example.com/motd:2")
	if strings.TrimSpace(r.Stdout) != "motd of the app layer" {
		t.Errorf("run after the removal: %s", r)
	}
}

// TestLegacyConfig: rkt 1.x's /etc/rkt keeps working: paths.d's data
// directory is used when --dir is not given, stage1.d, trustedkeys and
// ACI auth files are reported and ignored, dockerAuth files still serve;
// a configuration directory others may write is named.
func TestLegacyConfig(t *testing.T) {
	env := testutil.NewEnv(t)
	data := filepath.Join(env.Root, "rkt1-data")
	write := func(rel, body string) {
		p := filepath.Join(env.LocalConfig, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("paths.d/paths.json", `{"rktKind":"paths","rktVersion":"v1","data":"`+data+`","stage1-images":"/usr/lib/rkt/stage1-images"}`)
	write("stage1.d/coreos.json", `{"rktKind":"stage1","rktVersion":"v1","name":"coreos.com/rkt/stage1-coreos","version":"1.30.0","location":"/usr/lib/rkt/stage1-images/stage1-coreos.aci"}`)
	write("auth.d/aci.json", `{"rktKind":"auth","rktVersion":"v1","domains":["example.com"],"type":"basic","credentials":{"user":"u","password":"p"}}`)
	write("auth.d/docker.json", `{"rktKind":"dockerAuth","rktVersion":"v1","registries":["quay.io"],"credentials":{"user":"u","password":"p"}}`)
	write("trustedkeys/prefix.d/coreos.com/rkt/8b86de38890ddb7291867b025210bd8888182190", "key")
	n := buildRKT1Node(t, data)
	before := n.snapshot(t)

	noDir := func(args ...string) testutil.Result {
		cmd := exec.Command(testutil.RKTBin(t), append([]string{"--local-config=" + env.LocalConfig, "--system-config=" + env.SystemConfig, "--user-config=" + env.UserConfig}, args...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := testutil.Result{Args: args, Stdout: out.String(), Stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.Code = ee.ExitCode()
		}
		return r
	}
	r := noDir("migrate", "--dry-run")
	if r.Code != 0 || !strings.Contains(r.Stdout, data) || !strings.Contains(r.Stdout, n.keys["example.com/busybox"]) {
		t.Errorf("rkt migrate without --dir does not use paths.d's %s: %s", data, r)
	}
	for _, want := range []string{"stage1.d", "trustedkeys", "stage1-images", "aci.json"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("rkt migrate does not report %s: %s", want, r)
		}
	}
	if strings.Contains(r.Stdout, "docker.json") {
		t.Errorf("a dockerAuth file reported unused: %s", r)
	}
	if strings.Contains(r.Stdout, "writable") {
		t.Errorf("root's 0755 configuration reported writable: %s", r)
	}
	// rkt 1.x's /etc/rkt, 2775 root:rkt-admin: its group may set what root's rkt reads.
	if err := os.Chown(env.LocalConfig, 0, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(env.LocalConfig, 0o2775); err != nil {
		t.Fatal(err)
	}
	if r := noDir("migrate", "--dry-run"); !strings.Contains(r.Stdout, env.LocalConfig+" is writable by group") {
		t.Errorf("rkt migrate does not name the group-writable %s: %s", env.LocalConfig, r)
	}
	os.Chown(env.LocalConfig, 0, 0)
	os.Chmod(env.LocalConfig, 0o755)
	if r := noDir("list"); r.Code != 0 || !strings.Contains(r.Stderr, data) {
		t.Errorf("rkt list without --dir: %s", r)
	}
	// --dir wins over paths.d.
	if r := env.RunOK("migrate", "--dry-run"); !strings.Contains(r.Stdout, "no data of rkt 1.x") {
		t.Errorf("--dir did not win over paths.d: %s", r)
	}
	n.checkIntact(t, before, "rkt with rkt 1.x's configuration")
	// The registry credentials of auth.d load: a fetch goes as far as the registry.
	if r := noDir("fetch", "--no-progress", "--pull-policy=never", "quay.io/x/y:1"); strings.Contains(r.Stderr, "config") {
		t.Errorf("rkt 1.x's auth.d breaks fetch: %s", r)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	return !slices.ContainsFunc(keys, func(k string) bool { return a[k] != b[k] })
}
