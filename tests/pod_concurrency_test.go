package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

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

// TestPodAppIO covers the calls the CRI server makes on a running app:
// stats, resource updates, log reopening, exec and attach.
func TestPodAppIO(t *testing.T) {
	pe := newPodEnv(t)
	rt := newInProcessRuntime(t, pe)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uuid, err := rt.Sandbox(ctx, stage0.PodOptions{})
	if uuid != "" {
		pe.TrackPod(uuid)
	}
	if err != nil {
		t.Fatal(err)
	}
	if ps, err := rt.PodStats(ctx, uuid); err != nil || ps.MemoryUsage != 0 {
		t.Errorf("stats of an empty sandbox: %+v %v", ps, err)
	}
	logPath := filepath.Join(t.TempDir(), "app.log")
	if _, err := rt.AddApp(ctx, uuid, stage0.AppOptions{Name: "app", Image: pe.image, LogPath: logPath, Stdin: true,
		Exec: []string{"/bin/sh", "-c", "while read line; do echo got-$line; done"}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartApp(ctx, uuid, "app"); err != nil {
		t.Fatal(err)
	}
	st, err := rt.AppStats(ctx, uuid, "app")
	if err != nil || st.MemoryUsage == 0 || st.Processes == 0 {
		t.Errorf("app stats: %+v %v", st, err)
	}
	if ps, err := rt.PodStats(ctx, uuid); err != nil || ps.MemoryUsage == 0 || ps.Processes == 0 || ps.CPUUsageNanos == 0 {
		t.Errorf("pod stats: %+v %v", ps, err)
	}
	limit := int64(200 << 20)
	if err := rt.UpdateAppResources(ctx, uuid, "app", &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := rt.Exec(ctx, uuid, stage0.ExecOptions{App: "app", Args: []string{"/bin/sh", "-c", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"}, Stdout: &out})
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "209715200" {
		t.Errorf("memory limit after update: %q %d %v", out.String(), code, err)
	}
	// attach: what we write reaches the app's stdin; its output is logged
	pr, pw := io.Pipe()
	actx, acancel := context.WithCancel(ctx)
	attached := make(chan error, 1)
	go func() {
		attached <- rt.Attach(actx, uuid, stage0.AttachOptions{App: "app", Stdin: pr, Stdout: io.Discard})
	}()
	fmt.Fprintln(pw, "one")
	waitFor(t, func() bool { b, _ := os.ReadFile(logPath); return strings.Contains(string(b), "got-one") })
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if err := rt.ReopenAppLog(ctx, uuid, "app"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(pw, "two")
	waitFor(t, func() bool { b, _ := os.ReadFile(logPath); return strings.Contains(string(b), "got-two") })
	if b, _ := os.ReadFile(logPath + ".1"); strings.Contains(string(b), "got-two") {
		t.Error("line written after reopen went to the rotated log")
	}
	acancel()
	pw.Close()
	<-attached
	if err := rt.Stop(ctx, uuid, stage0.StopOptions{Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
	}
}
