package kubeletsvc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
)

// writeCheckpoint writes a checkpoint of the apps of pod (fake) into a new
// directory, with the given version and process args.
func writeCheckpoint(t *testing.T, e *testEnv, pod string, version int, args []string) string {
	t.Helper()
	ps, err := e.rt.Status(e.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	cm := stage0.CheckpointManifest{Version: version, Pod: schema.PodManifest{UUID: pod}}
	for _, a := range ps.Apps {
		cm.Pod.Apps = append(cm.Pod.Apps, a.App)
		cm.Apps = append(cm.Apps, stage0.CheckpointedApp{Name: a.Name, Args: args, PIDNamespace: "host"})
	}
	return writeCheckpointDir(t, &cm)
}

// writeCheckpointDir writes the manifest cm, and for each of its apps an
// empty criu inventory and layer where cm.Files puts them, into a new
// directory.
func writeCheckpointDir(t *testing.T, cm *stage0.CheckpointManifest) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range cm.Apps {
		files := cm.Files(dir, a.Name)
		if err := os.MkdirAll(files.Criu, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{filepath.Join(files.Criu, "inventory.img"), files.Layer} {
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, _ := json.Marshal(cm)
	if err := os.WriteFile(filepath.Join(dir, stage0.CheckpointManifestFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRestorePod(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	e.startContainer(t, orig, "b")
	ckpt := writeCheckpoint(t, e, orig, stage0.PodCheckpointVersion, nil)
	cfgs := []*runtimeapi.ContainerConfig{containerConfig("a", "busybox"), containerConfig("b", "busybox")}
	req := func(cfgs ...*runtimeapi.ContainerConfig) *runtimeapi.RestorePodRequest {
		return &runtimeapi.RestorePodRequest{CheckpointPath: ckpt, Config: sandboxConfig("restored"), ContainerConfigs: cfgs}
	}
	pods := func() int {
		l, err := e.rt.List(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range l {
			if p.State == stage0.PodRunning {
				n++
			}
		}
		return n
	}
	running := pods()
	other := containerConfig("a", "busybox")
	other.Image = &runtimeapi.ImageSpec{Image: "nginx"}
	e.haveImage("nginx")
	newer := writeCheckpoint(t, e, orig, stage0.CheckpointVersion+1, nil)
	otherCmd := writeCheckpoint(t, e, orig, stage0.PodCheckpointVersion, []string{"/bin/other"})
	bad := []struct {
		what string
		req  *runtimeapi.RestorePodRequest
		code codes.Code
		criu error
	}{
		{"no containers", req(), codes.InvalidArgument, nil},
		{"a name twice", req(cfgs[0], cfgs[0]), codes.InvalidArgument, nil},
		{"a missing container", req(cfgs[0]), codes.InvalidArgument, nil},
		{"an extra container", req(cfgs[0], cfgs[1], containerConfig("c", "busybox")), codes.InvalidArgument, nil},
		{"a relative path", &runtimeapi.RestorePodRequest{CheckpointPath: "ckpt", Config: sandboxConfig("r"), ContainerConfigs: cfgs}, codes.InvalidArgument, nil},
		{"no checkpoint", &runtimeapi.RestorePodRequest{CheckpointPath: t.TempDir(), Config: sandboxConfig("r"), ContainerConfigs: cfgs}, codes.InvalidArgument, nil},
		{"a newer checkpoint", &runtimeapi.RestorePodRequest{CheckpointPath: newer, Config: sandboxConfig("r"), ContainerConfigs: cfgs}, codes.FailedPrecondition, nil},
		{"an option", &runtimeapi.RestorePodRequest{CheckpointPath: ckpt, Config: sandboxConfig("r"), ContainerConfigs: cfgs, Options: map[string]string{"k": "v"}}, codes.InvalidArgument, nil},
		{"an unknown handler", &runtimeapi.RestorePodRequest{CheckpointPath: ckpt, Config: sandboxConfig("r"), ContainerConfigs: cfgs, RuntimeHandler: "kata"}, codes.InvalidArgument, nil},
		{"no usable criu", req(cfgs...), codes.FailedPrecondition, stage0.ErrCheckpointUnsupported},
		{"another image", req(other, cfgs[1]), codes.FailedPrecondition, nil},
		{"another command", &runtimeapi.RestorePodRequest{CheckpointPath: otherCmd, Config: sandboxConfig("r"), ContainerConfigs: cfgs}, codes.FailedPrecondition, nil},
	}
	for _, tc := range bad {
		e.rt.criuErr = tc.criu
		_, err := e.rs.RestorePod(e.ctx, tc.req)
		wantCode(t, tc.what, err, tc.code)
		if n := pods(); n != running {
			t.Fatalf("RestorePod with %s left %d running pods, want %d", tc.what, n, running)
		}
	}
	e.rt.criuErr = nil
	r, err := e.rs.RestorePod(e.ctx, req(cfgs[1], cfgs[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RestoredContainers) != 2 || r.RestoredContainers[0].Name != "b" || r.RestoredContainers[1].Name != "a" || r.PodSandboxId == orig {
		t.Fatalf("RestorePod answered %v", r)
	}
	for _, rc := range r.RestoredContainers {
		st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: rc.ContainerId})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			t.Errorf("restored %s is %v", rc.Name, st.Status.State)
		}
	}
	for k, o := range e.rt.appOpts {
		if strings.HasPrefix(k, r.PodSandboxId) {
			want := stage0.CheckpointFiles{Criu: filepath.Join(ckpt, o.Name, "criu"), Layer: filepath.Join(ckpt, o.Name, "rootfs.tar")}
			if o.Prestart || o.RestoreFrom == nil || *o.RestoreFrom != want {
				t.Errorf("app %s added with Prestart %v, RestoreFrom %v", o.Name, o.Prestart, o.RestoreFrom)
			}
		}
	}
	if !slices.ContainsFunc(e.rt.called(), func(c string) bool { return strings.HasPrefix(c, "AddApp "+r.PodSandboxId) }) {
		t.Errorf("no app added to the restored sandbox: %v", e.rt.called())
	}
}

// A RestorePod refused because a container's image is not the checkpointed
// one must not leave behind the missing mount sources it created on the
// host (security.md: "missing sources are created only after every check
// passed (and removed if the create then fails)").
func TestRestorePodImageMismatchLeavesNoMountSource(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	ckpt := writeCheckpoint(t, e, orig, stage0.PodCheckpointVersion, nil)
	e.haveImage("nginx")
	src := filepath.Join(t.TempDir(), "made", "by", "restore")
	cfg := containerConfig("a", "nginx") // not the checkpointed busybox
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: src, ContainerPath: "/data"}}
	_, err := e.rs.RestorePod(e.ctx, &runtimeapi.RestorePodRequest{
		CheckpointPath: ckpt, Config: sandboxConfig("restored"), ContainerConfigs: []*runtimeapi.ContainerConfig{cfg},
	})
	wantCode(t, "RestorePod with another image", err, codes.FailedPrecondition)
	if _, err := os.Lstat(filepath.Dir(filepath.Dir(src))); err == nil {
		t.Errorf("the refused restore left the mount source directories it created (%s)", filepath.Dir(filepath.Dir(src)))
	}
}

// TestRestorePodRefusedLeavesNoMountSource: a RestorePod refused once
// containers were created (the second container's command is not the
// checkpointed process's) removes the mount sources it created on the host
// for every container, the ones created before the refusal too.
func TestRestorePodRefusedLeavesNoMountSource(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	e.startContainer(t, orig, "b")
	ps, err := e.rt.Status(e.ctx, orig)
	if err != nil {
		t.Fatal(err)
	}
	cm := stage0.CheckpointManifest{Version: stage0.PodCheckpointVersion, Pod: schema.PodManifest{UUID: orig}}
	for _, a := range ps.Apps {
		cm.Pod.Apps = append(cm.Pod.Apps, a.App)
		ca := stage0.CheckpointedApp{Name: a.Name, PIDNamespace: "host"}
		if ContainerName(a.App.Annotations) == "b" {
			ca.Args = []string{"/bin/other"}
		}
		cm.Apps = append(cm.Apps, ca)
	}
	ckpt := writeCheckpointDir(t, &cm)
	tmp := t.TempDir()
	var cfgs []*runtimeapi.ContainerConfig
	for _, n := range []string{"a", "b"} {
		cfg := containerConfig(n, "busybox")
		cfg.Mounts = []*runtimeapi.Mount{{HostPath: filepath.Join(tmp, n, "made", "by", "restore"), ContainerPath: "/data"}}
		cfgs = append(cfgs, cfg)
	}
	_, err = e.rs.RestorePod(e.ctx, &runtimeapi.RestorePodRequest{CheckpointPath: ckpt, Config: sandboxConfig("restored"), ContainerConfigs: cfgs})
	wantCode(t, "RestorePod of another command", err, codes.FailedPrecondition)
	for _, n := range []string{"a", "b"} {
		if _, err := os.Lstat(filepath.Join(tmp, n)); err == nil {
			t.Errorf("the refused restore left the mount source directories it created for container %s (%s)", n, filepath.Join(tmp, n))
		}
	}
	if owner, held := e.svc.sandboxNames.Owner(sandboxKey(sandboxConfig("restored").GetMetadata())); held {
		t.Errorf("the refused restore left its sandbox name reserved for %s", owner)
	}
}

// TestRestoreNotAllowed: without Config.CheckpointRestore, a restore from
// a pod checkpoint, a container checkpoint archive or a checkpoint image
// is refused (FailedPrecondition) before anything is read or created: a
// checkpoint's images give its process the credentials they say.
func TestRestoreNotAllowed(t *testing.T) {
	e := newTestEnv(t)
	e.svc.cfg.CheckpointRestore = false
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	ckpt := writeCheckpoint(t, e, orig, stage0.PodCheckpointVersion, nil)
	_, err := e.rs.RestorePod(e.ctx, &runtimeapi.RestorePodRequest{
		CheckpointPath: ckpt, Config: sandboxConfig("restored"), ContainerConfigs: []*runtimeapi.ContainerConfig{containerConfig("a", "busybox")},
	})
	wantCode(t, "RestorePod", err, codes.FailedPrecondition)
	_, err = e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: orig,
		Config: containerConfig("from-archive", "/var/lib/checkpoints/a.tar"), SandboxConfig: sandboxConfig("orig")})
	wantCode(t, "CreateContainer from an archive", err, codes.FailedPrecondition)
	if !strings.Contains(fmt.Sprint(err), "--checkpoint-restore") {
		t.Errorf("the refusal does not say how to allow restores: %v", err)
	}
}
