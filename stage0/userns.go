package stage0

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/fileperm"
	"github.com/rkt/rkt/pkg/schema"
)

// CheckUserNS validates a pod's user namespace: exactly one uid and one gid
// mapping, each of container ID 0 with a non-zero length that does not wrap.
func CheckUserNS(u *schema.UserNamespace) error {
	if u == nil {
		return nil
	}
	for kind, m := range map[string][]specs.LinuxIDMapping{"uid": u.UIDMappings, "gid": u.GIDMappings} {
		if len(m) != 1 {
			return fmt.Errorf("a pod user namespace needs exactly one %s mapping, not %d: %w", kind, len(m), ErrInvalid)
		}
		e := m[0]
		if e.ContainerID != 0 {
			return fmt.Errorf("the %s mapping of a pod user namespace must map container ID 0 (it starts at %d): %w", kind, e.ContainerID, ErrInvalid)
		}
		if e.Size == 0 || uint64(e.HostID)+uint64(e.Size) > 1<<32-1 {
			return fmt.Errorf("invalid %s mapping 0:%d:%d of a pod user namespace: %w", kind, e.HostID, e.Size, ErrInvalid)
		}
	}
	return nil
}

// ParseIDMapping parses CONTAINERID:HOSTID:LENGTH (the CLI's form).
func ParseIDMapping(s string) (specs.LinuxIDMapping, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return specs.LinuxIDMapping{}, fmt.Errorf("invalid id mapping %q: want CONTAINERID:HOSTID:LENGTH: %w", s, ErrInvalid)
	}
	var v [3]uint32
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return specs.LinuxIDMapping{}, fmt.Errorf("invalid id mapping %q: %w", s, ErrInvalid)
		}
		v[i] = uint32(n)
	}
	return specs.LinuxIDMapping{ContainerID: v[0], HostID: v[1], Size: v[2]}, nil
}

// setupUserNS creates the pod's user namespace at <pod>/userns (by the
// one-shot `stage1 userns`) when the pod asks for one and does not have it
// yet (see userNSNetNS).
func (r *Runtime) setupUserNS(ctx context.Context, p *pod, pm *schema.PodManifest) error {
	if pm.UserNS == nil {
		return nil
	}
	return r.createUserNS(ctx, p, pm, "")
}

// userNSNetNS is, for a pod with a user namespace and a network namespace,
// networking's way to create that network namespace: inside the user
// namespace (created with it), so that the apps own it and may mount their
// sysfs. nil otherwise.
func (r *Runtime) userNSNetNS(ctx context.Context, p *pod, pm *schema.PodManifest) func(string) error {
	if pm.UserNS == nil || pm.Net == networking.NetHost {
		return nil
	}
	return func(path string) error { return r.createUserNS(ctx, p, pm, path) }
}

func (r *Runtime) createUserNS(ctx context.Context, p *pod, pm *schema.PodManifest, netns string) error {
	if err := allowUserNS(pm, p.dir); err != nil {
		return fmt.Errorf("pod %s: %w", p.uuid, err)
	}
	if err := checkReachable(filepath.Dir(p.dir), pm.UserNS); err != nil {
		return fmt.Errorf("pod %s: %w", p.uuid, err)
	}
	args := []string{"userns", "--pod-dir=" + p.dir}
	if netns != "" {
		args = append(args, "--netns="+netns)
	}
	out, err := exec.CommandContext(ctx, r.cfg.Stage1Path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot create the user namespace of pod %s: %w: %s", p.uuid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// checkReachable makes sure the apps of a pod with a user namespace can
// reach their rootfs below dir: the container's init resolves that path
// inside the namespace, where it has no privilege over directories owned
// by unmapped users, so every ancestor must be searchable by others or
// owned by a mapped user.
func checkReachable(dir string, u *schema.UserNamespace) error {
	m := u.UIDMappings[0]
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return fmt.Errorf("cannot stat %q: %w", d, err)
		}
		mapped := st.Uid >= m.HostID && uint64(st.Uid) < uint64(m.HostID)+uint64(m.Size)
		if st.Mode&0o001 == 0 && !mapped {
			return fmt.Errorf("directory %q (mode %#o) is not searchable from the pod's user namespace: its apps could not reach their rootfs (make it o+x): %w",
				d, st.Mode&0o7777, ErrInvalid)
		}
		if d == "/" {
			return nil
		}
	}
}

// mountAppRootfs mounts an app's overlay rootfs; in a pod with a user
// namespace its layers are idmapped to it, so that the image's root-owned
// files belong to the app's root. mns is the mount namespace of the pod's
// supervisor if it is not ours (nil otherwise): there is its user
// namespace.
func mountAppRootfs(p *pod, pm *schema.PodManifest, appDir schema.AppDir, layers []string, mns *supervisorMountNS) error {
	if pm.UserNS == nil {
		return mountRootfs(appDir, layers)
	}
	rootfs := appDir.Rootfs()
	if err := makeAppFS(appDir); err != nil {
		return err
	}
	if err := allowUserNS(pm, p.dir, p.layout().AppsDir(), string(appDir), appDir.FS()); err != nil {
		return err
	}
	if mounted, err := mountinfo.Mounted(rootfs); err == nil && mounted {
		return nil
	}
	ns, err := mns.open(p.layout().UserNS())
	if err != nil {
		return fmt.Errorf("cannot open the user namespace of pod %s: %w", p.uuid, err)
	}
	defer ns.Close()
	// Elsewhere than its mount namespace, <pod>/userns is an empty file.
	if t, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_NSTYPE); err != nil || t != unix.CLONE_NEWUSER {
		return fmt.Errorf("cannot use %q as the user namespace of pod %s: not a user namespace", p.layout().UserNS(), p.uuid)
	}
	tmp := appDir.IDMap()
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("cannot create %q: %w", tmp, err)
	}
	mapped := make([]string, len(layers))
	// The overlay keeps its layers' mounts alive: the temporary mount
	// points go once it is mounted (or failed). Never RemoveAll here: a
	// mount point that failed to unmount would expose an image layer.
	defer func() {
		unmountUnder(tmp)
		for _, m := range mapped {
			if m != "" {
				os.Remove(m)
			}
		}
		os.Remove(tmp)
	}()
	for i, l := range layers {
		mapped[i] = filepath.Join(tmp, strconv.Itoa(i))
		if err := idmapMount(l, mapped[i], ns); err != nil {
			return err
		}
	}
	// The upper directory is not idmapped (overlay refuses writes from the
	// namespace then): it belongs to the app's root, and what the app
	// writes is stored with the host IDs of its users.
	upper := appDir.Upper()
	uid, gid := int(pm.UserNS.UIDMappings[0].HostID), int(pm.UserNS.GIDMappings[0].HostID)
	if err := os.Chown(upper, uid, gid); err != nil {
		return fmt.Errorf("cannot give %q to the pod's root (%d:%d): %w", upper, uid, gid, err)
	}
	return mountOverlay(rootfs, mapped, upper, appDir.Work(), appDir.Empty())
}

// idmapMount mounts an idmapped clone of src (mapped through the user
// namespace ns) at dst.
func idmapMount(src, dst string, ns *os.File) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return fmt.Errorf("cannot create %q: %w", dst, err)
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cannot clone mount %q: %w", src, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("cannot idmap %q (the filesystem may not support idmapped mounts): %w", src, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("cannot mount the idmapped %q at %q: %w", src, dst, err)
	}
	return nil
}

// idmappable reports whether the filesystem of path supports idmapped
// mounts (the common local ones; overlayfs, the image volumes, does not).
func idmappable(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// addUserNS makes the app join the pod's user namespace (stage1 fills in
// the path) with the pod's mappings. The pod's own network, IPC and UTS
// namespaces belong to it; the host's (host network, host IPC) do not, and
// there the app may not mount sysfs or mqueue: /sys becomes a read-only
// bind of the host's (as for rootless containers) and /dev/mqueue is left
// out (mq_open works without it). Bind mounts of filesystems that support
// it are idmapped to the namespace.
func addUserNS(s *specs.Spec, pm *schema.PodManifest) {
	if pm.UserNS == nil {
		return
	}
	mounts := s.Mounts[:0]
	for _, m := range s.Mounts {
		switch m.Type {
		case "mqueue":
			if !pm.HostIPC {
				break // the pod's IPC namespace is the user namespace's
			}
			continue
		case "sysfs":
			if pm.Net != networking.NetHost {
				break // the pod's network namespace is the user namespace's
			}
			m = specs.Mount{Destination: m.Destination, Type: "bind", Source: "/sys",
				Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
		case "bind":
			if idmappable(m.Source) {
				// volumes: the host's root-owned files are the app root's
				m.Options = append(append([]string(nil), m.Options...), "idmap")
			}
		}
		mounts = append(mounts, m)
	}
	s.Mounts = mounts
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	s.Linux.UIDMappings = append([]specs.LinuxIDMapping(nil), pm.UserNS.UIDMappings...)
	s.Linux.GIDMappings = append([]specs.LinuxIDMapping(nil), pm.UserNS.GIDMappings...)
}

// allowUserNS lets the root of a user-namespaced pod (an unprivileged host
// user) search dirs, so that its apps reach their rootfs and volumes; other
// users stay out. A no-op for pods without a user namespace.
func allowUserNS(pm *schema.PodManifest, dirs ...string) error {
	if pm.UserNS == nil {
		return nil
	}
	gid := pm.UserNS.GIDMappings[0].HostID
	for _, d := range dirs {
		if err := fileperm.AllowSearch(d, gid); err != nil {
			return err
		}
	}
	return nil
}
