package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/store"
	"github.com/rkt/rkt/tests/testutil"
)

// newInProcessRuntime returns a stage0 runtime on the environment, as the
// CRI server uses it (in process, concurrently).
func newInProcessRuntime(t testing.TB, pe *podEnv) *stage0.Runtime {
	t.Helper()
	s, err := store.Open(pe.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := stage0.New(stage0.Config{
		DataDir: pe.DataDir, Stage1Path: testutil.Stage1Bin(t), Store: s,
		Net: networking.Config{DataDir: pe.DataDir, ConfDir: filepath.Join(pe.LocalConfig, "net.d"), DefaultBridge: pe.bridge, DefaultSubnet: pe.subnet},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestPodConcurrentApps adds, starts, stops and removes apps of one sandbox
// concurrently, and runs sandboxes concurrently, as the kubelet does.
func TestPodConcurrentApps(t *testing.T) {
	pe := newPodEnv(t)
	rt := newInProcessRuntime(t, pe)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const pods, apps = 3, 4
	uuids := make([]string, pods)
	var wg sync.WaitGroup
	errs := make(chan error, pods*apps*4)
	for i := range uuids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := rt.Sandbox(ctx, stage0.PodOptions{})
			uuids[i] = u
			if err != nil {
				errs <- fmt.Errorf("sandbox %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	for _, u := range uuids {
		if u != "" {
			pe.TrackPod(u)
		}
	}
	for _, u := range uuids {
		for j := 0; j < apps; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("app%d", j)
				if _, err := rt.AddApp(ctx, u, stage0.AppOptions{Name: name, Image: pe.image, Exec: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"}}); err != nil {
					errs <- fmt.Errorf("add %s to %s: %w", name, u, err)
					return
				}
				if err := rt.StartApp(ctx, u, name); err != nil {
					errs <- fmt.Errorf("start %s in %s: %w", name, u, err)
				}
			}()
		}
	}
	wg.Wait()
	for _, u := range uuids {
		ps, err := rt.Status(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, a := range ps.Apps {
			if a.State == "running" {
				running++
			}
		}
		if len(ps.Apps) != apps || running != apps {
			t.Errorf("pod %s: %d apps, %d running; want %d", u, len(ps.Apps), running, apps)
		}
	}
	for _, u := range uuids {
		for j := 0; j < apps; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("app%d", j)
				if err := rt.StopApp(ctx, u, name, stage0.StopOptions{Timeout: 5 * time.Second}); err != nil {
					errs <- fmt.Errorf("stop %s in %s: %w", name, u, err)
				}
				if err := rt.RemoveApp(ctx, u, name); err != nil {
					errs <- fmt.Errorf("remove %s from %s: %w", name, u, err)
				}
			}()
		}
	}
	wg.Wait()
	for _, u := range uuids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ps, err := rt.Status(ctx, u); err != nil || len(ps.Apps) != 0 {
				errs <- fmt.Errorf("pod %s after removing its apps: %v %v", u, ps, err)
			}
			if err := rt.Remove(ctx, u, true); err != nil {
				errs <- fmt.Errorf("remove pod %s: %w", u, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
