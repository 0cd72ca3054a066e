package kubeletsvc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

func TestCreateContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	img := e.haveImage("docker.io/library/nginx:1.25")
	src := filepath.Join(t.TempDir(), "data") // missing: created for the bind mount
	cfg := containerConfig("nginx", "nginx:1.25")
	cfg.Command, cfg.Args = []string{"/bin/nginx"}, []string{"-g", "daemon off;"}
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}}
	cfg.WorkingDir = "/srv"
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: src, Readonly: true}}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: 1000},
		Seccomp:   &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}}
	r, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	id := r.GetContainerId()
	if owner, ok := podOfContainerID(id); !ok || owner != pod {
		t.Errorf("container ID %q does not name its pod %s", id, pod)
	}
	o := e.rt.appOpts[appKey(pod, "nginx-0")]
	if o.Image != img.ID || !slices.Equal(o.Exec, cfg.Command) || !slices.Equal(o.Args, cfg.Args) || !slices.Contains(o.Env, "A=1") ||
		o.WorkingDir != "/srv" || o.User != "1000" || o.Seccomp != stage0.SeccompDefault {
		t.Errorf("app options %+v", o)
	}
	if o.LogPath != "/var/log/pods/web/nginx/0.log" {
		t.Errorf("log path %q, want the sandbox's log directory joined with the container's", o.LogPath)
	}
	if len(o.Mounts) != 1 || o.Mounts[0].Source != src || o.Mounts[0].Destination != "/data" || !o.Mounts[0].ReadOnly {
		t.Errorf("mounts %+v", o.Mounts)
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		t.Errorf("the missing mount source was not created: %v", err)
	}
	if o.Annotations[annoKind] != kindContainer || o.Annotations[annoContainerID] != id || o.Annotations[annoImageRef] != img.ID {
		t.Errorf("annotations %v lack the CRI metadata", o.Annotations)
	}
	st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	if s := st.GetStatus(); s.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED || s.GetImageRef() != img.ID || s.GetImage().GetImage() != "nginx:1.25" {
		t.Errorf("status %v", s)
	}
}

func TestCreateContainerRefused(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	e.haveImage("busybox")
	stopped := e.runPod(t, "stopped")
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: stopped}); err != nil {
		t.Fatal(err)
	}
	relMount := containerConfig("c", "busybox")
	relMount.Mounts = []*runtimeapi.Mount{{ContainerPath: "data", HostPath: "/tmp"}}
	noDevice := containerConfig("c", "busybox")
	noDevice.Devices = []*runtimeapi.Device{{HostPath: "/dev/null", ContainerPath: "/dev/a"},
		{HostPath: filepath.Join(t.TempDir(), "gone"), ContainerPath: "/dev/b"}}
	for _, tc := range []struct {
		name string
		pod  string
		cfg  *runtimeapi.ContainerConfig
		code codes.Code
	}{
		{"no name", pod, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "busybox"}}, codes.InvalidArgument},
		{"no image", pod, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}}, codes.InvalidArgument},
		{"relative mount", pod, relMount, codes.InvalidArgument},
		{"image not pulled", pod, containerConfig("c", "nginx"), codes.NotFound},
		{"unknown sandbox", "0123abcd-0000-4000-8000-000000000000", containerConfig("c", "busybox"), codes.NotFound},
		{"sandbox not ready", stopped, containerConfig("c", "busybox"), codes.FailedPrecondition},
		{"missing device", pod, noDevice, codes.NotFound},
	} {
		_, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: tc.pod, Config: tc.cfg})
		wantCode(t, tc.name, err, tc.code)
	}
	for _, c := range e.rt.called() {
		if c[:6] == "AddApp" {
			t.Errorf("refused requests reached stage0: %s", c)
		}
	}
	_, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: noDevice})
	if !strings.Contains(status.Convert(err).Message(), "devices[1].host_path") {
		t.Errorf("a missing device: %v, want it named devices[1].host_path", err)
	}
	// a refused name is not reserved
	e.createContainer(t, pod, "c")
}

func TestCreateContainerNames(t *testing.T) {
	e := newTestEnv(t)
	pod, other := e.runPod(t, "web"), e.runPod(t, "other")
	e.createContainer(t, pod, "app")
	_, err := e.rs.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: containerConfig("app", "busybox")})
	wantCode(t, "the same name twice", err, codes.AlreadyExists)
	e.createContainer(t, other, "app") // names are per sandbox
	// "a b" and "a/b" are two CRI names with one app name, "a-b-0"
	first, second := e.createContainer(t, pod, "a b"), e.createContainer(t, pod, "a/b")
	var names []string
	pods, _ := e.rt.List(e.ctx)
	for _, p := range pods {
		if p.UUID == pod {
			for _, a := range p.Apps {
				names = append(names, a.Name)
			}
		}
	}
	if !slices.Contains(names, "a-b-0") || !slices.Contains(names, "a-b-0-"+second[32:40]) {
		t.Errorf("apps %v: the second of two colliding names should get its ID's digits", names)
	}
	for _, id := range []string{first, second} {
		if _, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id}); err != nil {
			t.Errorf("ContainerStatus(%s): %v", id, err)
		}
	}
}
