package stage0

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/lock"
)

// ContainerDump is config.dump of a container checkpoint: the fields of
// the ContainerConfig of CRI-O's and containerd's archives that
// checkpointctl shows.
type ContainerDump struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	RootfsImageName string    `json:"rootfsImageName,omitempty"`
	RootfsImageRef  string    `json:"rootfsImageRef,omitempty"`
	Runtime         string    `json:"runtime,omitempty"`
	CreatedTime     time.Time `json:"createdTime"`
	CheckpointedAt  time.Time `json:"checkpointedTime"`
}

// ContainerArchive is where CheckpointApp writes and what it says of the
// container besides its checkpoint.
type ContainerArchive struct {
	// Path is a new file, absolute, in an existing directory.
	Path string
	// Dump is written as config.dump; CheckpointApp sets CheckpointedAt,
	// and Runtime when empty.
	Dump ContainerDump
	// Annotations are added to those of the app's spec in spec.dump (the
	// CRI's metadata, under the keys checkpointctl reads).
	Annotations map[string]string
}

// CheckpointApp writes a checkpoint of the running app of the running pod
// uuid as a tar archive at a.Path, a new file (0600, root's): a container
// checkpoint (version 2: the layout of CRI-O's and containerd's archives,
// with checkpoint.json; extracted, RestorePod reads it), from the checkpoint
// CheckpointPod writes of this app alone. The directory is made in the
// pod's Checkpoints directory, locked while in use, and removed after. The
// archive's directory must exist and the archive must not (ErrExists); on
// error nothing is left at a.Path.
func (r *Runtime) CheckpointApp(ctx context.Context, uuid, app string, a ContainerArchive) error {
	archive := a.Path
	if err := checkArchivePath(archive); err != nil {
		return err
	}
	criu, criuVer, err := r.Criu(ctx)
	if err != nil {
		return err
	}
	p, err := r.runningPod(uuid)
	if err != nil {
		return err
	}
	dir, release, err := p.newCheckpointDir(app + ".")
	if err != nil {
		return err
	}
	defer release()
	cm, appSpecs, err := r.checkpointPod(ctx, p, CheckpointOptions{Dir: dir, Apps: []string{app}}, criu, criuVer)
	if err != nil {
		return err
	}
	if err := toContainerLayout(cm, appSpecs[0], dir, app, a); err != nil {
		return fmt.Errorf("cannot make the checkpoint of app %q of pod %s a container checkpoint: %w", app, p.uuid, err)
	}
	if err := writeArchive(ctx, dir, archive); err != nil {
		return fmt.Errorf("cannot archive the checkpoint of app %q of pod %s: %w", app, p.uuid, err)
	}
	return nil
}

// toContainerLayout turns the pod checkpoint cm of app (whose spec is
// spec) in dir into a container checkpoint: its files moved, spec.dump and
// config.dump written, then checkpoint.json rewritten.
func toContainerLayout(cm *CheckpointManifest, spec *specs.Spec, dir, app string, a ContainerArchive) error {
	from := cm.Files(dir, app)
	cm.Version = ContainerCheckpointVersion
	to := cm.Files(dir, app)
	for _, mv := range [][2]string{{from.Criu, to.Criu}, {from.Layer, to.Layer}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(dir, app)); err != nil {
		return err
	}
	annos := maps.Clone(spec.Annotations)
	if annos == nil {
		annos = map[string]string{}
	}
	maps.Copy(annos, a.Annotations)
	spec.Annotations = annos
	dump := a.Dump
	dump.CheckpointedAt = cm.CreatedAt
	if dump.Runtime == "" {
		dump.Runtime = "rkt"
	}
	for name, v := range map[string]any{"spec.dump": spec, "config.dump": dump} {
		if err := writeCheckpointJSON(filepath.Join(dir, name), v); err != nil {
			return err
		}
	}
	return writeCheckpointJSON(filepath.Join(dir, CheckpointManifestFile), cm)
}

// newCheckpointDir makes a private directory named prefix* in the pod's
// Checkpoints directory, locked (removeStaleCheckpoints leaves it) until
// release, which removes it.
func (p *pod) newCheckpointDir(prefix string) (dir string, release func(), err error) {
	parent := p.layout().Checkpoints()
	if err := fileperm.MkdirAll(parent, fileperm.Private); err != nil {
		return "", nil, fmt.Errorf("cannot create the checkpoints directory of pod %s: %w", p.uuid, err)
	}
	if dir, err = os.MkdirTemp(parent, prefix); err != nil {
		return "", nil, fmt.Errorf("cannot create a checkpoint directory in pod %s: %w", p.uuid, err)
	}
	l, err := lock.TryExclusive(dir, lock.Dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("cannot lock checkpoint directory %q: %w", dir, err)
	}
	return dir, func() {
		os.RemoveAll(dir)
		l.Close()
	}, nil
}

// removeStaleCheckpoints removes what CheckpointApp calls cut off by a
// crash left in the pod's Checkpoints directory: directories no call has
// locked, older than newDirMinAge.
func (r *Runtime) removeStaleCheckpoints(p *pod) {
	r.removeAbandoned(p.layout().Checkpoints(), func(string) bool { return true })
}

// checkArchivePath checks that archive is a clean absolute path to no
// file, in an existing directory.
func checkArchivePath(archive string) error {
	if !filepath.IsAbs(archive) || filepath.Clean(archive) != archive || archive == "/" {
		return fmt.Errorf("checkpoint archive %q is not a clean absolute path to a file: %w", archive, ErrInvalid)
	}
	if fi, err := os.Stat(filepath.Dir(archive)); err != nil || !fi.IsDir() {
		return fmt.Errorf("directory of checkpoint archive %q is not an existing directory: %w", archive, ErrInvalid)
	}
	if _, err := os.Lstat(archive); err == nil {
		return fmt.Errorf("checkpoint archive %q: %w", archive, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot check checkpoint archive %q: %w", archive, err)
	}
	return nil
}

// writeArchive writes the tree dir as a tar archive at archive: a
// temporary file beside it, synced, then linked to its name (which fails
// if a file took the name meanwhile) and its directory synced; not when
// ctx ended meanwhile.
func writeArchive(ctx context.Context, dir, archive string) error {
	f, err := fileperm.CreateTemp(archive)
	if err != nil {
		return err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	if err := fileperm.SetFile(f, fileperm.Private); err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if err := tw.AddFS(os.DirFS(dir)); err != nil {
		return fmt.Errorf("cannot write %q: %w", f.Name(), err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("cannot write %q: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %q: %w", f.Name(), err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Link(f.Name(), archive); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("checkpoint archive %q: %w", archive, ErrExists)
		}
		return fmt.Errorf("cannot create %q: %w", archive, err)
	}
	if err := fileperm.SyncDir(filepath.Dir(archive)); err != nil {
		os.Remove(archive)
		return err
	}
	return nil
}
