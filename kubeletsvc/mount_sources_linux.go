package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sync/singleflight"

	"github.com/rkt/rkt/stage0"
)

// checkMountSources checks the host side of the bind mounts of a
// translated config, changing nothing: a source's propagation must allow
// what the mount asks (as in containerd: Bidirectional needs a source on a
// shared mount, HostToContainer one on a shared or slave mount; anything
// else would silently not propagate). It returns the sources that do not
// exist yet, for the caller to create once every check has passed; a
// missing source is judged by the mount of its nearest existing parent,
// where it will be created.
func checkMountSources(ctx context.Context, mounts []stage0.Mount) ([]string, error) {
	var missing []string
	for i, m := range mounts {
		if m.Image != "" || m.Source == "" {
			continue
		}
		existing, err := checkHostPath(ctx, "mount:"+m.Source, func() (string, error) { return resolveHostPath(m.Source) })
		if err != nil && ctx.Err() == nil {
			// the node's, not the request's: a dead FUSE server, a loop
			return nil, fmt.Errorf("%w: mounts[%d].host_path %q: %w", errFailedPrecondition, i, m.Source, err)
		}
		if err != nil {
			return nil, fmt.Errorf("mounts[%d].host_path %q: %w", i, m.Source, err)
		}
		if existing != m.Source {
			missing = append(missing, m.Source)
		}
		if m.Propagation != "rshared" && m.Propagation != "rslave" {
			continue
		}
		shared, slave, err := mountPropagation(existing)
		if err != nil {
			return nil, fmt.Errorf("mounts[%d].host_path %q: cannot read its mount's propagation: %w", i, m.Source, err)
		}
		if m.Propagation == "rshared" && !shared {
			return nil, fmt.Errorf("%w: mounts[%d] (%q on %q) is Bidirectional but its host_path is not on a shared mount",
				errFailedPrecondition, i, m.Source, m.Destination)
		}
		if !shared && !slave {
			return nil, fmt.Errorf("%w: mounts[%d] (%q on %q) is HostToContainer but its host_path is on a private mount",
				errFailedPrecondition, i, m.Source, m.Destination)
		}
	}
	return missing, nil
}

// checkDevices checks that the host devices of a translated config exist: a
// missing one is NotFound naming its field (stage0's stat of it would be
// Unknown). Whether it is a device is stage0's check.
func checkDevices(ctx context.Context, devs []stage0.Device) error {
	for i, d := range devs {
		_, err := checkHostPath(ctx, "device:"+d.HostPath, func() (string, error) {
			_, err := os.Stat(d.HostPath)
			return "", err
		})
		if errors.Is(err, fs.ErrNotExist) {
			return notFoundf("devices[%d].host_path %q does not exist", i, d.HostPath)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("devices[%d].host_path %q: %w", i, d.HostPath, err)
		}
	}
	return nil
}

// hostPathChecks shares the checks of a host path in flight. A path on a
// server that does not answer (FUSE, NFS) blocks the thread that checks it
// until it answers: the kubelet's retries of the call wait for that check
// instead of each blocking a thread of its own, and each returns at its
// deadline.
var hostPathChecks singleflight.Group

// resolveHostPath is nearestExisting; tests replace it.
var resolveHostPath = nearestExisting

// checkHostPath runs check, or joins the same check (key) in flight, and
// returns its result or ctx's error, whichever comes first.
func checkHostPath(ctx context.Context, key string, check func() (string, error)) (string, error) {
	ch := hostPathChecks.DoChan(key, func() (any, error) { return check() })
	select {
	case r := <-ch:
		s, _ := r.Val.(string)
		return s, r.Err
	case <-ctx.Done():
		return "", fmt.Errorf("cannot check it (%w)", ctx.Err())
	}
}

// nearestExisting returns p with symlinks resolved if it exists, else its
// nearest existing parent (resolved).
func nearestExisting(p string) (string, error) {
	for q := p; ; q = filepath.Dir(q) {
		r, err := filepath.EvalSymlinks(q)
		if err == nil {
			if q == p {
				return p, nil
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || q == "/" {
			return "", err
		}
	}
}

// mountPropagation reports whether the mount holding path (symlinks
// resolved) is shared or a slave, from /proc/self/mountinfo.
func mountPropagation(path string) (shared, slave bool, err error) {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	mounts, err := mountinfo.GetMounts(mountinfo.ParentsFilter(path))
	if err != nil {
		return false, false, err
	}
	var best *mountinfo.Info
	for _, m := range mounts { // the last of the longest mount points is on top
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	if best == nil {
		return false, false, fmt.Errorf("no mount holds %q", path)
	}
	for _, opt := range strings.Fields(best.Optional) {
		shared = shared || strings.HasPrefix(opt, "shared:")
		slave = slave || strings.HasPrefix(opt, "master:")
	}
	return shared, slave, nil
}

// createMountSources creates the missing bind-mount sources as
// directories, as the kubelet expects of runtimes. It returns an undo that
// removes the directories it made (only while still empty).
func createMountSources(paths []string) (func(), error) {
	var made []string
	undo := func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	}
	for _, p := range paths {
		var chain []string // missing directories, deepest first
		for q := p; ; q = filepath.Dir(q) {
			if _, err := os.Lstat(q); err == nil || q == "/" {
				break
			}
			chain = append(chain, q)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			if err := os.Mkdir(chain[i], 0o755); err != nil {
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				undo()
				return func() {}, fmt.Errorf("cannot create missing mount source %q: %w", p, err)
			}
			made = append(made, chain[i])
		}
	}
	return undo, nil
}
