package kubeletsvc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
)

// writeContainerCheckpoint writes a container checkpoint (version 2) of
// the only app of pod (fake) into a new directory; edit changes its
// manifest.
func writeContainerCheckpoint(t *testing.T, e *testEnv, pod string, edit func(*stage0.CheckpointManifest)) string {
	t.Helper()
	ps, err := e.rt.Status(e.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	cm := stage0.CheckpointManifest{Version: stage0.ContainerCheckpointVersion, Pod: schema.PodManifest{UUID: pod}}
	if len(ps.Apps) != 1 {
		t.Fatalf("pod %s has %d apps, want 1", pod, len(ps.Apps))
	}
	a := ps.Apps[0]
	cm.Pod.Apps = []schema.App{a.App}
	cm.Apps = []stage0.CheckpointedApp{{Name: a.Name, PIDNamespace: "host"}}
	if edit != nil {
		edit(&cm)
	}
	return writeCheckpointDir(t, &cm)
}

// TestCreateContainerFromArchive: an absolute path as image is a container
// checkpoint archive: the container is created to restore it, with the
// checkpointed image and command and the request's name, log and labels;
// what cannot be restored is refused and creates nothing.
func TestCreateContainerFromArchive(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	good := writeContainerCheckpoint(t, e, orig, nil)
	e.rt.archives = map[string]string{
		"/ckpt/a.tar": good,
		"/ckpt/tty.tar": writeContainerCheckpoint(t, e, orig, func(cm *stage0.CheckpointManifest) {
			cm.Pod.Apps[0].TTY = true
		}),
		"/ckpt/not-cri.tar": writeContainerCheckpoint(t, e, orig, func(cm *stage0.CheckpointManifest) {
			cm.Pod.Apps[0].Annotations = nil
		}),
		"/ckpt/other-command.tar": writeContainerCheckpoint(t, e, orig, func(cm *stage0.CheckpointManifest) {
			cm.Apps[0].Args = []string{"/bin/other"}
		}),
		"/ckpt/pod.tar": writeCheckpoint(t, e, orig, stage0.PodCheckpointVersion, nil),
	}
	pod := e.runPod(t, "restored")
	create := func(image string) (string, error) {
		cfg := containerConfig("restored", image)
		cfg.Labels = map[string]string{"new": "label"}
		r, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: sandboxConfig("restored")})
		return r.GetContainerId(), err
	}
	for _, tc := range []struct {
		image string
		code  codes.Code
	}{
		{"/ckpt/missing.tar", codes.InvalidArgument},
		{"/ckpt/tty.tar", codes.FailedPrecondition},
		{"/ckpt/not-cri.tar", codes.InvalidArgument},
		{"/ckpt/pod.tar", codes.InvalidArgument},
		{"/ckpt/other-command.tar", codes.FailedPrecondition},
	} {
		_, err := create(tc.image)
		wantCode(t, "CreateContainer from "+tc.image, err, tc.code)
		l, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: pod}})
		if err != nil || len(l.Containers) != 0 {
			t.Fatalf("CreateContainer from %s left %v (%v)", tc.image, l.GetContainers(), err)
		}
	}
	id, err := create("/ckpt/a.tar")
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	img := e.haveImage("busybox")
	if s := st.Status; s.State != runtimeapi.ContainerState_CONTAINER_CREATED || s.Metadata.Name != "restored" ||
		s.ImageRef != img.ID || s.Image.GetImage() != "/ckpt/a.tar" || s.Labels["new"] != "label" || s.Labels["ctr"] != "" {
		t.Errorf("restored container: %v %s, image %s (%s), labels %v", s.State, s.Metadata.Name, s.Image.GetImage(), s.ImageRef, s.Labels)
	}
	var found bool
	for k, o := range e.rt.appOpts {
		if k == appKey(pod, o.Name) {
			found = true
			want := stage0.CheckpointFiles{Criu: filepath.Join(good, "checkpoint"), Layer: filepath.Join(good, "rootfs-diff.tar")}
			if o.Prestart || o.RestoreFrom == nil || *o.RestoreFrom != want || o.Image != img.ID {
				t.Errorf("app %s added with Prestart %v, RestoreFrom %v, image %s", o.Name, o.Prestart, o.RestoreFrom, o.Image)
			}
		}
	}
	if !found {
		t.Errorf("no app added to pod %s: %v", pod, e.rt.called())
	}
}

// TestCreateContainerFromCheckpointImage: a one-layer image without a
// command is looked into, under a hold of the store (its layer must not be
// swept while it is read and copied): with a checkpoint's layout it is
// restored, without one it runs as any image; every hold is released.
func TestCreateContainerFromCheckpointImage(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	ckpt := writeContainerCheckpoint(t, e, orig, nil)
	if err := os.WriteFile(filepath.Join(ckpt, "spec.dump"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	oneLayer := func(name, dir string) {
		img := e.haveImage(name)
		e.store.mu.Lock()
		img.Layers = []store.Layer{{Digest: "sha256:" + strings.Repeat("1", 64)}}
		e.store.layers[img.ID] = []string{dir}
		e.store.mu.Unlock()
	}
	oneLayer("example.org/ckpt:1", ckpt)
	oneLayer("example.org/plain:1", t.TempDir())
	pod := e.runPod(t, "restored")
	for _, tc := range []struct {
		image   string
		restore bool
	}{{"example.org/ckpt:1", true}, {"example.org/plain:1", false}} {
		r, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod,
			Config: containerConfig("c-"+strings.Split(tc.image, "/")[1][:4], tc.image), SandboxConfig: sandboxConfig("restored")})
		if err != nil {
			t.Fatalf("CreateContainer from %s: %v", tc.image, err)
		}
		ct, err := e.svc.getContainer(e.ctx, r.ContainerId)
		if err != nil {
			t.Fatal(err)
		}
		o := e.rt.appOpts[appKey(pod, ct.app.App.Name)]
		if (o.RestoreFrom != nil) != tc.restore {
			t.Errorf("container of %s: RestoreFrom %v, want a restore: %v", tc.image, o.RestoreFrom, tc.restore)
		}
	}
	e.store.mu.Lock()
	defer e.store.mu.Unlock()
	if e.store.unheldReads != 0 || e.store.heldReads != 2 || e.store.holds != 0 {
		t.Errorf("layers read %d times under a hold, %d without; %d holds left open", e.store.heldReads, e.store.unheldReads, e.store.holds)
	}
}

// TestRestoredConfig: the dumped process's command, working directory and
// environment (under the request's), the request's everything else: a
// checkpoint's own security context is not taken.
func TestRestoredConfig(t *testing.T) {
	orig := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "orig"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
		Command: []string{"sh"}, Args: []string{"-c", "count"}, WorkingDir: "/work",
		Envs:   []*runtimeapi.KeyValue{{Key: "A", Value: []byte("orig")}, {Key: "B", Value: []byte("orig")}},
		Labels: map[string]string{"old": "x"},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			Privileged: true, Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"ALL"}}}},
	}
	req := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "new", Attempt: 2},
		Image:    &runtimeapi.ImageSpec{Image: "sha256:ckpt", UserSpecifiedImage: "registry/ckpt:1"},
		Command:  []string{"ignored"}, Envs: []*runtimeapi.KeyValue{{Key: "B", Value: []byte("new")}, {Key: "C", Value: []byte("new")}},
		LogPath: "new.log", Labels: map[string]string{"new": "y"},
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp"}},
	}
	cfg := restoredConfig(orig, req, "sha256:base")
	if cfg.Metadata.Name != "new" || cfg.Metadata.Attempt != 2 || cfg.LogPath != "new.log" || cfg.Labels["new"] != "y" || cfg.Labels["old"] != "" || len(cfg.Mounts) != 1 {
		t.Errorf("the request's metadata, log, labels and mounts are not kept: %v", cfg)
	}
	if cfg.Image.Image != "sha256:base" || cfg.Image.UserSpecifiedImage != "registry/ckpt:1" {
		t.Errorf("image %v, want the checkpointed one, shown as the pod spec's", cfg.Image)
	}
	if strings.Join(cfg.Command, " ") != "sh" || strings.Join(cfg.Args, " ") != "-c count" || cfg.WorkingDir != "/work" {
		t.Errorf("command %q %q in %q, want the dumped process's", cfg.Command, cfg.Args, cfg.WorkingDir)
	}
	var envs []string
	for _, e := range cfg.Envs {
		envs = append(envs, e.Key+"="+string(e.Value))
	}
	if got := strings.Join(envs, " "); got != "A=orig B=new C=new" {
		t.Errorf("envs %s, want A=orig B=new C=new", got)
	}
	if sc := cfg.GetLinux().GetSecurityContext(); sc.GetPrivileged() || sc.GetCapabilities() != nil {
		t.Errorf("the checkpoint's security context was taken: %v", sc)
	}
	if orig.Metadata.Name != "orig" || len(orig.Envs) != 2 || string(orig.Envs[1].Value) != "orig" {
		t.Errorf("orig (shared, read-only) was changed: %v", orig)
	}
}

// TestCreateContainerRestoreRefusedLeavesNothing: a CreateContainer from a
// checkpoint that is refused once its container was created (the
// checkpointed process is not the one the request leads to) leaves
// nothing: no container, no app, its name free, and no mount source it
// created on the host.
func TestCreateContainerRestoreRefusedLeavesNothing(t *testing.T) {
	e := newTestEnv(t)
	orig := e.runPod(t, "orig")
	e.startContainer(t, orig, "a")
	e.rt.archives = map[string]string{
		"/ckpt/other-command.tar": writeContainerCheckpoint(t, e, orig, func(cm *stage0.CheckpointManifest) {
			cm.Apps[0].Args = []string{"/bin/other"}
		}),
	}
	pod := e.runPod(t, "restored")
	made := filepath.Join(t.TempDir(), "made")
	cfg := containerConfig("restored", "/ckpt/other-command.tar")
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: filepath.Join(made, "by", "restore"), ContainerPath: "/data"}}
	_, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: sandboxConfig("restored")})
	wantCode(t, "CreateContainer from a checkpoint of another command", err, codes.FailedPrecondition)
	if _, err := os.Lstat(made); err == nil {
		t.Errorf("the refused restore left the mount source directories it created (%s)", made)
	}
	ps, err := e.rt.Status(e.ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Apps) != 0 {
		t.Errorf("the refused restore left apps in pod %s: %v", pod, ps.Apps)
	}
	if owner, held := e.svc.containerNames.Owner(containerKey(pod, cfg.GetMetadata())); held {
		t.Errorf("the refused restore left its name reserved for %s", owner)
	}
}
