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
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/stage0"
)

// TestKubeletCheckpoint: the kubelet's checkpoint API (ContainerCheckpoint,
// on by default) on a static pod's container reaches CheckpointContainer:
// the archive is in the kubelet's checkpoints directory, private, holds
// that container's checkpoint, and the container runs on, not restarted.
func TestKubeletCheckpoint(t *testing.T) {
	requireRoot(t)
	_, k, ref := kubeletOnRkt(t, "ckpt/busybox:1", "--criu="+toolPath(t, "criu"))
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
	running := func() (*kubeletPod, error) {
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
	k.waitFor("the pod running", 90*time.Second, func() (err error) { before, err = running(); return err })

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
	after, err := running()
	must(t, "the pod after its checkpoint", err)
	b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if a.RestartCount != b.RestartCount || a.State.Running.StartedAt != b.State.Running.StartedAt {
		t.Errorf("the container restarted: %+v, before %+v", a, b)
	}
	must(t, "remove the manifest", os.Remove(manifestPath))
	k.waitFor("the pod stopped", time.Minute, func() error {
		if p, err := k.pod(name); err != nil || p != nil {
			return fmt.Errorf("pod still there (%v)", err)
		}
		return nil
	})
}
