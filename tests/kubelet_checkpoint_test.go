package tests

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
	"github.com/rkt/rkt/tests/testutil"
)

// TestKubeletCheckpoint: the kubelet's checkpoint API (ContainerCheckpoint,
// on by default) on a static pod's container reaches CheckpointContainer:
// the archive is in the kubelet's checkpoints directory, private, holds
// that container's checkpoint, and the container runs on, not restarted.
// A static pod whose image is that archive as a checkpoint image restores
// the container.
func TestKubeletCheckpoint(t *testing.T) {
	requireRoot(t)
	c, k, ref := kubeletOnRkt(t, "ckpt/busybox:1", "--criu="+toolPath(t, "criu"), "--checkpoint-restore")
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: ckpt, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    command: [sh, -c, 'trap "exit 0" TERM; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done']
`, ref)
	manifestPath := filepath.Join(k.Manifests, "ckpt.yaml")
	must(t, "write the manifest", os.WriteFile(manifestPath, []byte(manifest), 0o600))
	name := "ckpt-" + k.NodeName
	running := func(name string) (*kubeletPod, error) {
		p, err := k.pod(name)
		if err != nil {
			return nil, err
		}
		if p == nil || p.Status.Phase != "Running" || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
			return nil, fmt.Errorf("pod %s not running: %+v", name, p)
		}
		return p, nil
	}
	var before *kubeletPod
	k.waitFor("the pod running", 90*time.Second, func() (err error) { before, err = running(name); return err })

	// the count of the first or last line of a container's CRI log (time
	// stream tag count)
	count := func(pod string, last bool) int {
		l, err := c.ListContainers(rpcCtx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.name": pod}}})
		if err != nil || len(l.Containers) != 1 {
			return 0
		}
		st, err := c.ContainerStatus(rpcCtx(t), &runtimeapi.ContainerStatusRequest{ContainerId: l.Containers[0].Id})
		if err != nil {
			return 0
		}
		b, _ := os.ReadFile(st.Status.LogPath)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		line := lines[0]
		if last {
			line = lines[len(lines)-1]
		}
		if f := strings.Fields(line); len(f) == 4 {
			n, _ := strconv.Atoi(f[3])
			return n
		}
		return 0
	}
	k.waitFor("the counter past 10", 30*time.Second, func() error {
		if n := count(name, true); n <= 10 {
			return fmt.Errorf("at %d", n)
		}
		return nil
	})
	cut := count(name, true) // the checkpoint is later

	url := k.url("https", k.Port, "/checkpoint/default/"+name+"/app?timeout=60")
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	t0 := time.Now()
	resp, err := hc.Post(url, "", nil)
	must(t, "POST "+url, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, body)
	}
	t.Logf("kubelet checkpoint API answered in %v: %s", time.Since(t0), body)
	var items struct{ Items []string }
	must(t, "parse the answer", json.Unmarshal(body, &items))
	if len(items.Items) != 1 || !strings.HasPrefix(items.Items[0], filepath.Join(k.Root, "checkpoints")+"/") {
		t.Fatalf("the kubelet's answer names %v, want one archive in %s/checkpoints", items.Items, k.Root)
	}
	archive := items.Items[0]
	fi, err := os.Stat(archive)
	must(t, "stat the archive", err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("archive %s has mode %v, want 0600", archive, fi.Mode().Perm())
	}
	var cm stage0.CheckpointManifest
	must(t, "decode the archive's manifest", json.Unmarshal([]byte(tarFile(t, archive, stage0.CheckpointManifestFile)), &cm))
	if cm.Version != stage0.ContainerCheckpointVersion || len(cm.Apps) != 1 || tarFile(t, archive, "checkpoint/inventory.img") == "" {
		t.Errorf("the archive's checkpoint: version %d, apps %v; want a container checkpoint with its CRIU images", cm.Version, cm.Apps)
	}
	// what checkpointctl says of it
	out, err := exec.Command(toolPath(t, "checkpointctl"), "inspect", "--format=json", archive).CombinedOutput()
	var shown []struct {
		ContainerName string `json:"container_name"`
		Runtime       string `json:"runtime"`
	}
	if err == nil {
		err = json.Unmarshal(out, &shown)
	}
	if err != nil || len(shown) != 1 || shown[0].ContainerName != "app" || shown[0].Runtime != "rkt" {
		t.Errorf("checkpointctl inspect: %v, %+v\n%s", err, shown, out)
	}

	time.Sleep(2 * time.Second) // a few pod syncs
	after, err := running(name)
	must(t, "the pod after its checkpoint", err)
	b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if a.RestartCount != b.RestartCount || a.State.Running.StartedAt != b.State.Running.StartedAt {
		t.Errorf("the container restarted: %+v, before %+v", a, b)
	}

	// The archive as a checkpoint image (the archive's files as the only
	// layer, nothing to run: as the Kubernetes documentation builds one)
	// in a registry: a static pod of that image restores the container,
	// which counts on from the cut instead of from 1.
	layer, err := os.ReadFile(archive)
	must(t, "read the archive", err)
	ckptRef := testutil.StartRegistry(t).Push(t, "ckpt/app-checkpoint:1", testutil.Image(t, testutil.ImageConfig{}, testutil.LayerFromTar(t, layer)))
	restoredPath := filepath.Join(k.Manifests, "restored.yaml")
	must(t, "write the manifest", os.WriteFile(restoredPath, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: restored, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
`, ckptRef)), 0o600))
	restored := "restored-" + k.NodeName
	k.waitFor("the restored pod running", 90*time.Second, func() error { _, err := running(restored); return err })
	l, err := c.ListContainers(rpcCtx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": restored}}})
	must(t, "ListContainers", err)
	if len(l.Containers) != 1 {
		t.Fatalf("the restored pod has %d containers, want 1", len(l.Containers))
	}
	if img := l.Containers[0].Image.GetImage(); img != ckptRef && !strings.HasSuffix(img, "ckpt/app-checkpoint:1") {
		t.Errorf("the restored container reports image %q, want the checkpoint image %s", img, ckptRef)
	}
	var first int
	k.waitFor("the restored container's log", 30*time.Second, func() error {
		if first = count(restored, false); first == 0 {
			return fmt.Errorf("no count yet")
		}
		return nil
	})
	if first <= cut {
		t.Errorf("the restored container's first count is %d, the original's was %d before the checkpoint: it started anew", first, cut)
	}
	t.Logf("the restored container counts on from %d", first)

	for _, p := range []string{manifestPath, restoredPath} {
		must(t, "remove the manifest", os.Remove(p))
	}
	k.waitFor("the pods stopped", time.Minute, func() error {
		for _, n := range []string{name, restored} {
			if p, err := k.pod(n); err != nil || p != nil {
				return fmt.Errorf("pod %s still there (%v)", n, err)
			}
		}
		return nil
	})
}
