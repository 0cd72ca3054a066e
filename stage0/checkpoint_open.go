package stage0

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rkt/rkt/pkg/tarx"
)

// ContainerCheckpoint is a container checkpoint (one app, version 2) read
// for a restore: its manifest and its files, valid until Close.
type ContainerCheckpoint struct {
	Manifest *CheckpointManifest
	Files    CheckpointFiles
	close    func()
}

// App is the checkpointed app.
func (cc *ContainerCheckpoint) App() CheckpointedApp { return cc.Manifest.Apps[0] }

// Close releases what OpenContainerArchive extracted.
func (cc *ContainerCheckpoint) Close() {
	if cc.close != nil {
		cc.close()
	}
}

// ReadContainerCheckpoint reads the container checkpoint in dir (an
// extracted archive of CheckpointApp, or an image layer holding one):
// ErrInvalid when dir holds no checkpoint or a pod checkpoint.
func ReadContainerCheckpoint(dir string) (*ContainerCheckpoint, error) {
	cm, err := ReadCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	if cm.Version != ContainerCheckpointVersion {
		return nil, fmt.Errorf("%q is a pod checkpoint, not a container checkpoint: %w", dir, ErrInvalid)
	}
	return &ContainerCheckpoint{Manifest: cm, Files: cm.Files(dir, cm.Apps[0].Name)}, nil
}

// OpenContainerArchive extracts the container checkpoint archive (a tar of
// CheckpointApp's, an absolute path) for a restore into pod uuid: into a
// temporary directory of the pod's Checkpoints, locked until Close, which
// removes it. ErrInvalid when the archive is no container checkpoint.
func (r *Runtime) OpenContainerArchive(uuid, archive string) (_ *ContainerCheckpoint, retErr error) {
	if !filepath.IsAbs(archive) {
		return nil, fmt.Errorf("checkpoint archive %q is not an absolute path: %w", archive, ErrInvalid)
	}
	f, err := openHostRegular(archive)
	if err != nil {
		return nil, fmt.Errorf("cannot open checkpoint archive %q: %w (%w)", archive, ErrInvalid, err)
	}
	defer f.Close()
	p, err := r.runningPod(uuid)
	if err != nil {
		return nil, err
	}
	dir, release, err := p.newCheckpointDir("restore.")
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			release()
		}
	}()
	if err := tarx.Extract(f, dir, tarx.Options{Whiteouts: tarx.WhiteoutApply}); err != nil {
		return nil, fmt.Errorf("cannot extract checkpoint archive %q: %w (%w)", archive, ErrInvalid, err)
	}
	cc, err := ReadContainerCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint archive %q: %w", archive, err)
	}
	cc.close = release
	return cc, nil
}

// ContainerCheckpointIn reads the container checkpoint in dir, an image
// layer: nil when dir does not have a container checkpoint's layout
// (checkpoint.json, spec.dump and the checkpoint directory), so that an
// image that only happens to hold one of these files runs as any image.
func ContainerCheckpointIn(dir string) (*ContainerCheckpoint, error) {
	for _, f := range []string{CheckpointManifestFile, "spec.dump", "checkpoint"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return ReadContainerCheckpoint(dir)
}
