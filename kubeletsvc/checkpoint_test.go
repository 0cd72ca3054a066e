package kubeletsvc

import (
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCheckpointPod(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	a, b := e.startContainer(t, pod, "a"), e.startContainer(t, pod, "b")
	created := e.createContainer(t, pod, "new")
	other := e.runPod(t, "other")
	elsewhere := e.startContainer(t, other, "c")
	req := func(ids ...string) *runtimeapi.CheckpointPodRequest {
		return &runtimeapi.CheckpointPodRequest{PodSandboxId: pod, OutputPath: "/ckpt", ContainerIds: ids}
	}
	if _, err := e.rs.CheckpointPod(e.ctx, req(a, b)); err != nil {
		t.Fatal(err)
	}
	if want := "CheckpointPod " + pod + " /ckpt a-0,b-0"; !slices.Contains(e.rt.called(), want) {
		t.Errorf("stage0 calls %v lack %q", e.rt.called(), want)
	}
	bad := []struct {
		what string
		req  *runtimeapi.CheckpointPodRequest
		code codes.Code
	}{
		{"no containers", req(), codes.InvalidArgument},
		{"a container twice", req(a, a), codes.InvalidArgument},
		{"a created container", req(a, created), codes.FailedPrecondition},
		{"another pod's container", req(a, elsewhere), codes.InvalidArgument},
		{"an unknown container", req(a, pod[:8]+"unknown"), codes.NotFound},
		{"an unknown sandbox", &runtimeapi.CheckpointPodRequest{PodSandboxId: "nosuchpod", OutputPath: "/ckpt", ContainerIds: []string{a}}, codes.NotFound},
		{"no output path", &runtimeapi.CheckpointPodRequest{PodSandboxId: pod, ContainerIds: []string{a}}, codes.InvalidArgument},
		{"an option", &runtimeapi.CheckpointPodRequest{PodSandboxId: pod, OutputPath: "/ckpt", ContainerIds: []string{a},
			Options: map[string]string{"tcp-established": "true"}}, codes.InvalidArgument},
	}
	for _, tc := range bad {
		n := len(e.rt.called())
		_, err := e.rs.CheckpointPod(e.ctx, tc.req)
		wantCode(t, tc.what, err, tc.code)
		for _, c := range e.rt.called()[n:] {
			if len(c) > 13 && c[:13] == "CheckpointPod" {
				t.Errorf("%s: stage0 was asked to checkpoint: %s", tc.what, c)
			}
		}
	}
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.CheckpointPod(e.ctx, req(a))
	wantCode(t, "a stopped sandbox", err, codes.FailedPrecondition)
}

func TestCheckpointContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	a := e.startContainer(t, pod, "a")
	created := e.createContainer(t, pod, "new")
	req := func(id string) *runtimeapi.CheckpointContainerRequest {
		return &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: "/ckpt.tar", Timeout: 30}
	}
	if _, err := e.rs.CheckpointContainer(e.ctx, req(a)); err != nil {
		t.Fatal(err)
	}
	if want := "CheckpointApp " + pod + " a-0 /ckpt.tar a web"; !slices.Contains(e.rt.called(), want) {
		t.Errorf("stage0 calls %v lack %q", e.rt.called(), want)
	}
	bad := []struct {
		what string
		req  *runtimeapi.CheckpointContainerRequest
		code codes.Code
	}{
		{"no location", &runtimeapi.CheckpointContainerRequest{ContainerId: a}, codes.InvalidArgument},
		{"a negative timeout", &runtimeapi.CheckpointContainerRequest{ContainerId: a, Location: "/ckpt.tar", Timeout: -1}, codes.InvalidArgument},
		{"a created container", req(created), codes.FailedPrecondition},
		{"an unknown container", req(pod[:8] + "unknown"), codes.NotFound},
		{"no container", req(""), codes.InvalidArgument},
	}
	for _, tc := range bad {
		n := len(e.rt.called())
		_, err := e.rs.CheckpointContainer(e.ctx, tc.req)
		wantCode(t, tc.what, err, tc.code)
		for _, c := range e.rt.called()[n:] {
			if strings.HasPrefix(c, "CheckpointApp") {
				t.Errorf("%s: stage0 was asked to checkpoint: %s", tc.what, c)
			}
		}
	}
	// a timeout too long for a time.Duration is no deadline, not one
	// already past
	for _, timeout := range []int64{1 << 62, 9223372037, math.MaxInt64} {
		r := req(a)
		r.Timeout = timeout
		if _, err := e.rs.CheckpointContainer(e.ctx, r); err != nil {
			t.Errorf("CheckpointContainer with timeout %d: %v", timeout, err)
		}
	}
	if _, err := e.rs.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	_, err := e.rs.CheckpointContainer(e.ctx, req(a))
	wantCode(t, "a stopped sandbox", err, codes.FailedPrecondition)
}
