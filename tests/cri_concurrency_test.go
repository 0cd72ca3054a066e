package tests

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/tests/testutil"
)

// TestCRIConcurrency runs pod lifecycles in parallel (as the kubelet does
// for different pods) and races five creations of one sandbox name: exactly
// one wins, the others get AlreadyExists.
func TestCRIConcurrency(t *testing.T) {
	requireRoot(t)
	env := testutil.NewEnv(t)
	svc := startCRIService(t, env)
	c := dialCRI(t, svc)
	_, imgID := pullTestImage(t, c)
	t.Cleanup(func() { removeAllPods(t, c) })

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := rpcCtx(t)
			pod, ctr := runPodWithContainer(t, c, fmt.Sprintf("parallel-%d", i), imgID, "")
			es, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: ctr, Cmd: []string{"hostname"}, Timeout: 30})
			if err != nil || string(es.Stdout) != fmt.Sprintf("parallel-%d\n", i) {
				errs <- fmt.Errorf("pod %d: exec hostname: %q, %v", i, es.GetStdout(), err)
				return
			}
			if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
				errs <- fmt.Errorf("pod %d: stop: %v", i, err)
				return
			}
			if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
				errs <- fmt.Errorf("pod %d: remove: %v", i, err)
			}
		}()
	}
	wg.Wait()

	var won, lost int
	var mu sync.Mutex
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.RunPodSandbox(rpcCtx(t), &runtimeapi.RunPodSandboxRequest{Config: podConfig("same-name", "")})
			mu.Lock()
			defer mu.Unlock()
			switch status.Code(err) {
			case codes.OK:
				won++
			case codes.AlreadyExists:
				lost++
			default:
				errs <- fmt.Errorf("racing RunPodSandbox: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won != 1 || lost != 4 {
		t.Errorf("racing the same sandbox name: %d won, %d got AlreadyExists; want 1 and 4", won, lost)
	}
	l, err := c.ListPodSandbox(rpcCtx(t), &runtimeapi.ListPodSandboxRequest{})
	must(t, "ListPodSandbox", err)
	if len(l.Items) != 1 {
		t.Errorf("%d sandboxes left, want the one that won", len(l.Items))
	}
}
