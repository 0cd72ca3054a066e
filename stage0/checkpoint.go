package stage0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// A pod checkpoint is a directory (Documentation/kubelet-service.md):
//
//	checkpoint.json         CheckpointManifest, written last: a directory
//	                        without it is no checkpoint
//	<app>/criu/             the app's CRIU images and dump.log
//	<app>/rootfs.tar        the app's overlay upper directory, an OCI layer
//
// A container checkpoint (CheckpointApp, version 2) holds one app in the
// layout CRI-O's and containerd's container archives share, which
// checkpointctl reads, and checkpoint.json:
//
//	checkpoint/             the app's CRIU images and dump.log
//	rootfs-diff.tar         the app's writable layer
//	spec.dump, config.dump  the app's OCI spec and ContainerDump
//
// Directories are 0700, files 0600, owned by root: the images hold the
// processes' memory.

// CheckpointVersion is the newest checkpoint layout this rkt reads: 1 is a
// pod checkpoint, 2 a container checkpoint.
const CheckpointVersion = 2

// Layout versions.
const (
	PodCheckpointVersion       = 1
	ContainerCheckpointVersion = 2
)

// CheckpointFiles are where a checkpointed app's files are.
type CheckpointFiles struct {
	Criu  string // directory of its CRIU images
	Layer string // its writable layer, a tar
}

// Files returns where the files of the checkpointed app are in the
// checkpoint directory dir.
func (cm *CheckpointManifest) Files(dir, app string) CheckpointFiles {
	if cm.Version == ContainerCheckpointVersion {
		return CheckpointFiles{Criu: filepath.Join(dir, "checkpoint"), Layer: filepath.Join(dir, "rootfs-diff.tar")}
	}
	return CheckpointFiles{Criu: filepath.Join(dir, app, "criu"), Layer: filepath.Join(dir, app, "rootfs.tar")}
}

// CheckpointManifestFile is the name of the checkpoint's manifest.
const CheckpointManifestFile = "checkpoint.json"

// MinCriuVersion is the oldest criu that dumps apps in a pod's shared PID
// namespace through libcontainer (3.15).
const MinCriuVersion = 31500

// ErrCheckpointUnsupported: no usable criu binary.
var ErrCheckpointUnsupported = errors.New("checkpoints are not supported here")

// CheckpointManifest describes a pod checkpoint.
type CheckpointManifest struct {
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	Criu      string    `json:"criu"` // version of the criu that dumped it
	// Pod is the pod's manifest, listing the checkpointed apps only.
	Pod  schema.PodManifest `json:"pod"`
	Apps []CheckpointedApp  `json:"apps"`
}

// CheckpointedApp is the process an app ran when it was dumped.
type CheckpointedApp struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Cwd  string   `json:"cwd,omitempty"`
	UID  uint32   `json:"uid"`
	GID  uint32   `json:"gid"`
	// PIDNamespace is PIDNamespaceOf its spec.
	PIDNamespace string `json:"pidNamespace"`
}

// PIDNamespaceOf says which PID namespace an app's spec (as stage0 writes
// it) gives it: "host" (none), "new" (its own, or the pod's when the pod has
// one: PodManifest.SharedPID) or "joined" (another app's).
func PIDNamespaceOf(spec *specs.Spec) string {
	if spec.Linux != nil {
		for _, ns := range spec.Linux.Namespaces {
			if ns.Type == specs.PIDNamespace {
				if ns.Path != "" {
					return "joined"
				}
				return "new"
			}
		}
	}
	return "host"
}

// CheckpointOptions say what CheckpointPod dumps and where.
type CheckpointOptions struct {
	// Dir is an existing, empty directory (absolute path, not a symlink).
	Dir string
	// Apps are the running apps of the pod to dump (at least one).
	Apps []string
}

// CheckpointPod writes a checkpoint of running apps of a running pod into
// opts.Dir: it pauses them all, dumps each with CRIU leaving it running,
// archives each app's writable layer, and resumes them all before it
// returns, also on error or when ctx ends (it then waits for the resume).
// It writes nothing outside opts.Dir and, on error, removes what it wrote
// there. ErrCheckpointUnsupported when no usable criu is found.
func (r *Runtime) CheckpointPod(ctx context.Context, uuid string, opts CheckpointOptions) error {
	if err := checkCheckpointDir(opts.Dir); err != nil {
		return err
	}
	if len(opts.Apps) == 0 {
		return fmt.Errorf("a checkpoint needs at least one app: %w", ErrInvalid)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(opts.Apps)))) != len(opts.Apps) {
		return fmt.Errorf("checkpoint names an app twice: %w", ErrInvalid)
	}
	criu, criuVer, err := r.Criu(ctx)
	if err != nil {
		return err
	}
	p, err := r.runningPod(uuid)
	if err != nil {
		return err
	}
	_, _, err = r.checkpointPod(ctx, p, opts, criu, criuVer)
	return err
}

// checkpointPod is CheckpointPod of the running pod p, opts checked, with
// the criu binary and its version; it returns the manifest it wrote and
// the specs of the apps, in the order of opts.Apps.
func (r *Runtime) checkpointPod(ctx context.Context, p *pod, opts CheckpointOptions, criu, criuVer string) (_ *CheckpointManifest, _ []*specs.Spec, retErr error) {
	pm, err := p.readManifest()
	if err != nil {
		return nil, nil, err
	}
	cm := &CheckpointManifest{Version: PodCheckpointVersion, CreatedAt: time.Now().UTC(), Criu: criuVer, Pod: *pm}
	cm.Pod.Apps = nil
	appSpecs := make([]*specs.Spec, 0, len(opts.Apps))
	for _, name := range opts.Apps {
		i := appIndex(pm, name)
		if i < 0 {
			return nil, nil, fmt.Errorf("app %q in pod %s: %w", name, p.uuid, ErrAppNotFound)
		}
		spec, _, err := readAppSpec(p, name)
		if err != nil {
			return nil, nil, err
		}
		ca := CheckpointedApp{Name: name, PIDNamespace: PIDNamespaceOf(spec)}
		if spec.Process != nil {
			ca.Args, ca.Cwd = spec.Process.Args, spec.Process.Cwd
			ca.UID, ca.GID = spec.Process.User.UID, spec.Process.User.GID
		}
		cm.Pod.Apps = append(cm.Pod.Apps, pm.Apps[i])
		cm.Apps = append(cm.Apps, ca)
		appSpecs = append(appSpecs, spec)
	}
	defer func() {
		if retErr != nil {
			emptyDir(opts.Dir)
		}
	}()
	c := control.NewClient(p.dir)
	err = c.Checkpoint(ctx, control.CheckpointSpec{Apps: opts.Apps, Dir: opts.Dir, Criu: criu})
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		// the deadline passed before a dump (the supervisor's ETIMEDOUT)
		// or during the last one: the call fails, what it wrote goes
		if err == nil {
			err = fmt.Errorf("the dumps ended after the deadline: %w", cerr)
		} else {
			err = errors.Join(cerr, err)
		}
	}
	if err != nil {
		return nil, nil, appErr(fmt.Errorf("cannot checkpoint pod %s: %w", p.uuid, err))
	}
	if err := writeCheckpointJSON(filepath.Join(opts.Dir, CheckpointManifestFile), cm); err != nil {
		return nil, nil, err
	}
	return cm, appSpecs, nil
}

// writeCheckpointJSON writes v, indented, durably to the private file path.
func writeCheckpointJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return fmt.Errorf("cannot encode %q: %w", path, err)
	}
	if err := fileperm.WriteFile(path, b, fileperm.Private); err != nil {
		return fmt.Errorf("cannot write %q: %w", path, err)
	}
	return nil
}

// checkCheckpointDir checks that dir is an absolute path to an existing,
// empty directory that is not a symlink.
func checkCheckpointDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("checkpoint directory %q is not a clean absolute path: %w", dir, ErrInvalid)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checkpoint directory %q: %w (%w)", dir, ErrInvalid, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("checkpoint directory %q is not a directory: %w", dir, ErrInvalid)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open checkpoint directory %q: %w", dir, err)
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		if err == nil {
			return fmt.Errorf("checkpoint directory %q is not empty: %w", dir, ErrInvalid)
		}
		return fmt.Errorf("cannot read checkpoint directory %q: %w", dir, err)
	}
	return nil
}

// emptyDir removes what a failed checkpoint left in dir (empty before it).
func emptyDir(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

var criuVersionRE = regexp.MustCompile(`(?m)^Version: (\d+)\.(\d+)(?:\.(\d+))?`)

// criuVersionTimeout bounds `criu --version`, which answers at once: a
// criu that hangs fails the call instead of holding it.
const criuVersionTimeout = 10 * time.Second

// Criu returns the absolute path and the version of the criu binary that
// checkpoints use (Config.Criu, or criu from PATH), or an error wrapping
// ErrCheckpointUnsupported when it is missing, older than MinCriuVersion,
// or does not tell its version within criuVersionTimeout.
func (r *Runtime) Criu(ctx context.Context) (string, string, error) {
	name := r.cfg.Criu
	if name == "" {
		name = "criu"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", "", fmt.Errorf("%w: cannot find criu %q: %w", ErrCheckpointUnsupported, name, err)
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrCheckpointUnsupported, err)
	}
	vctx, cancel := context.WithTimeout(ctx, criuVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, p, "--version")
	cmd.WaitDelay = time.Second // a child it left holds the output pipe
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%w: %s --version: %w: %.200s", ErrCheckpointUnsupported, p, err, out)
	}
	m := criuVersionRE.FindSubmatch(out)
	if m == nil {
		return "", "", fmt.Errorf("%w: %s --version says no version: %.200s", ErrCheckpointUnsupported, p, out)
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	sub, _ := strconv.Atoi(string(m[3]))
	ver := fmt.Sprintf("%d.%d.%d", major, minor, sub)
	if major*10000+minor*100+sub < MinCriuVersion {
		return "", "", fmt.Errorf("%w: %s is criu %s; 3.15 or later is needed", ErrCheckpointUnsupported, p, ver)
	}
	return p, ver, nil
}
