package stage0

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// makeAppFS creates the app's root-only fs directory (so that no other
// user reaches its rootfs, whose files a container may have made setuid)
// and in it the overlay's rootfs, upper and work directories. The upper
// directory's mode is the mode of the app's "/".
func makeAppFS(appDir schema.AppDir) error {
	if err := fileperm.Mkdir(appDir.FS(), fileperm.Private); err != nil {
		return err
	}
	for _, d := range []string{appDir.Rootfs(), appDir.Upper(), appDir.Work()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cannot create %q: %w", d, err)
		}
	}
	return nil
}

// appUpperDir returns an app's overlay upper directory: fs/upper, or upper
// for an app of a pod made by an rkt from before fs/ that still runs.
func appUpperDir(appDir schema.AppDir) string {
	if _, err := os.Lstat(appDir.FS()); errors.Is(err, fs.ErrNotExist) {
		if fi, err := os.Lstat(appDir.PreFSUpper()); err == nil && fi.IsDir() {
			return appDir.PreFSUpper()
		}
	}
	return appDir.Upper()
}

// mountRootfs mounts the app's overlay rootfs (image layers as lowerdirs,
// upper and work in the app's fs directory) unless it is mounted already.
func mountRootfs(appDir schema.AppDir, layers []string) error {
	rootfs := appDir.Rootfs()
	if err := makeAppFS(appDir); err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(rootfs); err == nil && mounted {
		return nil
	}
	return mountOverlay(rootfs, layers, appDir.Upper(), appDir.Work(), appDir.Empty())
}

// mountOverlay mounts an overlay of layers (lowest first) at rootfs, with the
// directory empty as the lowerdir when there are no layers.
func mountOverlay(rootfs string, layers []string, upper, work, empty string) error {
	lower := make([]string, 0, len(layers)+1)
	for i := len(layers) - 1; i >= 0; i-- { // overlay wants the top layer first
		lower = append(lower, layers[i])
	}
	if len(lower) == 0 {
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return fmt.Errorf("cannot create %q: %w", empty, err)
		}
		lower = append(lower, empty)
	}
	for _, l := range lower {
		if strings.ContainsAny(l, ",:") {
			return fmt.Errorf("layer directory %q cannot be used as an overlay lowerdir", l)
		}
	}
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lower, ":"), upper, work)
	if len(data) >= os.Getpagesize() {
		return fmt.Errorf("cannot mount rootfs %q: %d layers make overlay options longer than a page", rootfs, len(layers))
	}
	if err := unix.Mount("overlay", rootfs, "overlay", 0, data); err != nil {
		return fmt.Errorf("cannot mount overlay rootfs on %q: %w", rootfs, err)
	}
	return nil
}

// unmountUnder unmounts every mount at or below dir, deepest first (lazily
// when busy). It is idempotent.
func unmountUnder(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("cannot read mounts under %q: %w", dir, err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	var errs []error
	for _, m := range mounts {
		err := unix.Unmount(m.Mountpoint, unix.UMOUNT_NOFOLLOW)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(m.Mountpoint, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		}
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("cannot unmount %q: %w", m.Mountpoint, err))
		}
	}
	return errors.Join(errs...)
}

// removePodDir deletes a pod directory after making sure nothing is mounted
// below it, so that RemoveAll cannot reach into image layers or host paths.
func removePodDir(dir string) error {
	if err := unmountUnder(dir); err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("cannot read mounts under %q: %w", dir, err)
	}
	if len(mounts) > 0 {
		return fmt.Errorf("cannot remove %q: %s is still mounted", dir, mounts[0].Mountpoint)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cannot remove %q: %w", dir, err)
	}
	return nil
}
