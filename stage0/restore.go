package stage0

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/pkg/tarx"
)

// ReadCheckpoint reads and checks the manifest of the pod checkpoint in
// dir (CheckpointPod's layout): ErrInvalid when dir holds no checkpoint of
// this layout or misses an app's files, schema.ErrNewerVersion when it was
// written by a newer rkt. It never writes into dir.
func ReadCheckpoint(dir string) (*CheckpointManifest, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("checkpoint path %q is not absolute: %w", dir, ErrInvalid)
	}
	b, err := readRegularFile(filepath.Join(dir, CheckpointManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%q is no rkt pod checkpoint: %w (%w)", dir, ErrInvalid, err)
	}
	var cm CheckpointManifest
	if err := json.Unmarshal(b, &cm); err != nil {
		return nil, fmt.Errorf("cannot parse the checkpoint manifest in %q: %w (%w)", dir, ErrInvalid, err)
	}
	switch {
	case cm.Version > CheckpointVersion:
		return nil, fmt.Errorf("checkpoint %q has layout version %d, this rkt reads %d: %w", dir, cm.Version, CheckpointVersion, schema.ErrNewerVersion)
	case cm.Version < 1 || len(cm.Apps) == 0 || len(cm.Apps) != len(cm.Pod.Apps),
		cm.Version == ContainerCheckpointVersion && len(cm.Apps) != 1:
		return nil, fmt.Errorf("checkpoint %q: bad manifest (version %d, %d apps): %w", dir, cm.Version, len(cm.Apps), ErrInvalid)
	}
	for i, a := range cm.Apps {
		if a.Name != cm.Pod.Apps[i].Name || !validAppName(a.Name) {
			return nil, fmt.Errorf("checkpoint %q: bad app name %q: %w", dir, a.Name, ErrInvalid)
		}
		files := cm.Files(dir, a.Name)
		for _, f := range []string{filepath.Join(files.Criu, "inventory.img"), files.Layer} {
			if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || !inTree(dir, f) {
				return nil, fmt.Errorf("checkpoint %q lacks %s: %w", dir, f, ErrInvalid)
			}
		}
	}
	return &cm, nil
}

// readRegularFile reads p only if it is a regular file (fileperm.OpenRegular):
// the manifest of a checkpoint in an image layer is hostile, and a symlink
// would have the host's files read (/dev/zero without end), a FIFO block
// the read, a device node be opened.
func readRegularFile(p string) ([]byte, error) {
	f, err := fileperm.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %w", p, err)
	}
	return b, nil
}

// openHostRegular opens a host file that the caller named only if it is a
// regular file (fileperm.OpenRegular), its symlinks resolved first as
// containerd and CRI-O follow them: a FIFO would block the open, a device
// node be read.
func openHostRegular(p string) (*os.File, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, err
	}
	return fileperm.OpenRegular(real)
}

// inTree reports whether no directory between dir and its descendant path
// p is a symlink: a checkpoint (from an archive or an image) must not send
// a restore to files outside it.
func inTree(dir, p string) bool {
	rel, err := filepath.Rel(dir, filepath.Dir(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	d := filepath.Clean(dir)
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		if elem == "." {
			continue
		}
		d = filepath.Join(d, elem)
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// prepareRestore gives a new app the state of a checkpointed one (from,
// CheckpointManifest.Files): its writable layer, extracted through its
// mounted rootfs, and its CRIU images, copied to AppDir.Restore for stage1
// to restore at the app's start with the criu linked in PodDir.CriuBin.
func (r *Runtime) prepareRestore(ctx context.Context, p *pod, name string, from *CheckpointFiles) error {
	criu, _, err := r.Criu(ctx)
	if err != nil {
		return err
	}
	bin := p.layout().CriuBin()
	if err := fileperm.MkdirAll(bin, fileperm.Private); err != nil {
		return fmt.Errorf("cannot create %q: %w", bin, err)
	}
	link := filepath.Join(bin, "criu")
	if cur, err := os.Readlink(link); err != nil || cur != criu {
		os.Remove(link)
		if err := os.Symlink(criu, link); err != nil {
			return fmt.Errorf("cannot link %q: %w", link, err)
		}
	}
	dir := p.appDir(name)
	layer := from.Layer
	f, err := os.Open(layer)
	if err != nil {
		return fmt.Errorf("cannot open %q: %w", layer, err)
	}
	err = tarx.Extract(f, dir.Rootfs(), tarx.Options{Whiteouts: tarx.WhiteoutApply})
	f.Close()
	if err != nil {
		return fmt.Errorf("cannot restore the writable layer of app %q from %q: %w", name, layer, err)
	}
	src := from.Criu
	ents, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("cannot read %q: %w", src, err)
	}
	dst := dir.Restore()
	if err := fileperm.Mkdir(dst, fileperm.Private); err != nil {
		return fmt.Errorf("cannot create %q: %w", dst, err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyPrivate(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyPrivate copies the regular file src to the new private file dst.
func copyPrivate(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("cannot open %q: %w", src, err)
	}
	defer in.Close()
	out, err := fileperm.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileperm.Private)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", dst, err)
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot copy %q: %w", src, err)
	}
	return nil
}
