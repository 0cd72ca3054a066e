package kubeletsvc

import (
	"context"
	"fmt"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// TestNamesFreedWhenUnreadable: a sandbox or container that becomes
// unreadable while the service runs (its pod's manifest from a newer rkt
// or corrupt, its CRI config undecodable) is left out of lists, so the
// kubelet, seeing none, makes it again under the same name (a sandbox
// with attempt 0). That name is free, as a restarted service leaves it
// (recover reserves the names of what it lists): kept reserved, the
// kubelet got AlreadyExists until the service restarted.
func TestNamesFreedWhenUnreadable(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(e *testEnv, pod, ctr string)
		// what the kubelet makes again, and whether it still sees the sandbox
		again       func(e *testEnv, svc runtimeapi.RuntimeServiceServer, pod string) error
		sandboxGone bool
	}{
		{
			name: "pod of a newer rkt",
			break_: func(e *testEnv, pod, _ string) {
				e.breakPod(pod, fmt.Errorf("pod %s: %w", pod, schema.ErrNewerVersion))
			},
			again: runWeb, sandboxGone: true,
		},
		{
			name: "corrupt pod",
			break_: func(e *testEnv, pod, _ string) {
				e.breakPod(pod, fmt.Errorf("pod %s: unexpected end of JSON input", pod))
			},
			again: runWeb, sandboxGone: true,
		},
		{
			name:   "undecodable sandbox config",
			break_: func(e *testEnv, pod, _ string) { e.breakSandboxConfig(pod) },
			again:  runWeb, sandboxGone: true,
		},
		{
			name:   "undecodable container config",
			break_: func(e *testEnv, pod, ctr string) { e.breakConfig(pod, ctr) },
			again: func(e *testEnv, svc runtimeapi.RuntimeServiceServer, pod string) error {
				_, err := svc.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{
					PodSandboxId: pod, Config: containerConfig("c", "busybox"), SandboxConfig: sandboxConfig("web"),
				})
				return err
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			pod := e.runPod(t, "web")
			ctr := e.startContainer(t, pod, "c")
			e.svc.stats.rate(pod, time.Now(), 1) // samples, as stats calls take
			e.svc.stats.rate(ctr, time.Now(), 1)
			tc.break_(e, pod, ctr)

			// the kubelet sees neither it nor (for a sandbox) its containers
			sbs, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(sbs.GetItems()) == 0; got != tc.sandboxGone {
				t.Fatalf("ListPodSandbox: %d sandboxes", len(sbs.GetItems()))
			}
			ctrs, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(ctrs.GetContainers()); n != 0 {
				t.Fatalf("ListContainers: %d containers, want none", n)
			}

			// a restarted service leaves the name free ...
			restarted := newService(e.svc.cfg, e.store, e.rt, nil)
			if err := restarted.recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, held := restarted.sandboxNames.Owner(sandboxKey(sandboxConfig("web").GetMetadata())); held == tc.sandboxGone {
				t.Errorf("restarted: sandbox name held %v", held)
			}
			if _, held := restarted.containerNames.Owner(containerKey(pod, containerConfig("c", "busybox").GetMetadata())); held {
				t.Error("restarted: container name held")
			}
			// ... and so does the running one
			if err := tc.again(e, e.svc, pod); err != nil {
				t.Errorf("made again while the service runs: %v", toStatus(err))
			}

			// the repair drops the samples of what the kubelet cannot see
			e.svc.repair(e.ctx)
			e.svc.stats.mu.Lock()
			defer e.svc.stats.mu.Unlock()
			for _, k := range []string{pod, ctr} {
				if _, kept := e.svc.stats.last[k]; kept && (tc.sandboxGone || k == ctr) {
					t.Errorf("CPU sample of %s kept", k)
				}
			}
		})
	}
}

func runWeb(e *testEnv, svc runtimeapi.RuntimeServiceServer, _ string) error {
	_, err := svc.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	return err
}
