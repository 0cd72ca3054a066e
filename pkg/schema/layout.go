package schema

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The on-disk layout of pods: the only place that names the files and
// directories of a pod directory. Everyone else (stage0, stage1,
// networking, the CRI) asks PodDir and AppDir for paths.

// IsUUID reports whether s is a UUID in lower-case hex, as pods are named.
// (Not a regexp: compiled, the pattern held ~20 KiB of heap in every rkt
// process.)
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}

// PodsDir is where the pods of a data directory live, one directory per
// pod state below it (stage0 names the states).
func PodsDir(dataDir string) string { return filepath.Join(dataDir, "pods") }

// PodDir is a pod directory, <data dir>/pods/<state>/<uuid>.
type PodDir string

// Manifest is the PodManifest (JSON).
func (d PodDir) Manifest() string { return d.join("pod") }

// NetNS is the bind-mounted network namespace (absent for host networking).
func (d PodDir) NetNS() string { return d.join("netns") }

// ShmDir is root's only (the apps' shared memory is theirs, as their
// rootfs): it holds Shm.
func (d PodDir) ShmDir() string { return d.join("shm") }

// Shm is the pod's /dev/shm, a tmpfs (1777) every app binds
// (PodManifest.SharedShm).
func (d PodDir) Shm() string { return d.join("shm", "dev") }

// NetInfo holds the CNI results.
func (d PodDir) NetInfo() string { return d.join("net-info.json") }

// UserNS is the bind-mounted user namespace (only with PodManifest.UserNS).
func (d PodDir) UserNS() string { return d.join("userns") }

// Stage1PID holds the pid of the pod supervisor.
func (d PodDir) Stage1PID() string { return d.join("stage1.pid") }

// Stage1Socket is the control socket of the supervisor.
func (d PodDir) Stage1Socket() string { return d.join("stage1.sock") }

// CriuBin holds the link named criu to the criu binary of checkpoints
// (stage1 puts it first in its PATH for libcontainer).
func (d PodDir) CriuBin() string { return d.join("criu") }

// Checkpoints is root-only and holds the checkpoints of single apps while
// they are archived (stage0.CheckpointApp).
func (d PodDir) Checkpoints() string { return d.join("checkpoints") }

// Stage1Log is the supervisor's own stdout and stderr.
func (d PodDir) Stage1Log() string { return d.join("stage1.log") }

// Stage1Died is empty; created when the supervisor is found dead, its
// mtime is the time of death.
func (d PodDir) Stage1Died() string { return d.join("stage1.died") }

// Stage1Clean is empty; written by the supervisor as it exits when it
// released the pod's processes, containers and cgroups itself.
func (d PodDir) Stage1Clean() string { return d.join("stage1.clean") }

// Cleaned marks a pod whose resources stage0 released after it exited.
func (d PodDir) Cleaned() string { return d.join("stage0-cleaned") }

// Started marks a pod whose start finished (network, supervisor, etc
// files): without it, a pod in run/ whose stage0 and supervisor are gone
// was cut off while starting.
func (d PodDir) Started() string { return d.join("stage0-started") }

// Starting is locked by the stage0 that starts the pod until it marked it
// started: a pod whose supervisor runs without the mark and with this lock
// free lost its starter half-way.
func (d PodDir) Starting() string { return d.join("stage0-starting") }

// Volume is the backing directory of the pod's "empty" volume name.
func (d PodDir) Volume(name string) string { return d.join("volumes", name) }

// Volumes holds the backing directories of the pod's "empty" volumes.
func (d PodDir) Volumes() string { return d.join("volumes") }

// AppsDir holds one directory per app.
func (d PodDir) AppsDir() string { return d.join("apps") }

// RemovedApps is root-only and holds the directories of removed apps while
// they are deleted.
func (d PodDir) RemovedApps() string { return d.join("apps-removed") }

// App is the directory of the app name.
func (d PodDir) App(name string) AppDir { return AppDir(d.join("apps", name)) }

// DropRemovedApps drops from pm, the pod's manifest, the apps whose
// directory is gone from AppsDir, and reports whether it dropped any. An
// app is added with its directory first and removed with its directory
// first (renamed out, durably, before the manifest is rewritten): an app
// listed without its directory was removed, and the manifest not yet
// rewritten (or a crash came in between).
func (d PodDir) DropRemovedApps(pm *PodManifest) bool {
	kept := pm.Apps[:0]
	for _, a := range pm.Apps {
		if _, err := os.Lstat(string(d.App(a.Name))); !errors.Is(err, fs.ErrNotExist) {
			kept = append(kept, a)
		}
	}
	dropped := len(kept) < len(pm.Apps)
	clear(pm.Apps[len(kept):])
	pm.Apps = kept
	return dropped
}

// Rkt1AppsInfo is a directory that only rkt 1.x's pods have.
func (d PodDir) Rkt1AppsInfo() string { return d.join("appsinfo") }

func (d PodDir) join(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// AppDir is an app's directory, <pod>/apps/<name>.
type AppDir string

// Spec is the OCI runtime spec of the app, written by stage0.
func (d AppDir) Spec() string { return d.join("config.json") }

// Record is stage0's own record of the app (options and image).
func (d AppDir) Record() string { return d.join("stage0.json") }

// Status is the AppStatus (JSON), written by stage1.
func (d AppDir) Status() string { return d.join("status.json") }

// DefaultLog is the log file when App.LogPath is empty.
func (d AppDir) DefaultLog() string { return d.join("log") }

// FS is root-only and holds the app's filesystem: the paths below.
func (d AppDir) FS() string { return d.join("fs") }

// Rootfs is the overlay mountpoint, mounted by stage0.
func (d AppDir) Rootfs() string { return d.join("fs", "rootfs") }

// Upper is the overlay upperdir: the app's writable layer.
func (d AppDir) Upper() string { return d.join("fs", "upper") }

// Restore holds the CRIU images the app's first start restores (RestorePod)
// instead of running its process; stage1 removes it after the restore.
func (d AppDir) Restore() string { return d.join("restore") }

// Work is the overlay workdir.
func (d AppDir) Work() string { return d.join("fs", "work") }

// PreFSUpper is the upperdir of apps made before the fs directory.
func (d AppDir) PreFSUpper() string { return d.join("upper") }

// Empty is an empty directory (a lowerdir for images without layers).
func (d AppDir) Empty() string { return d.join("fs", "empty") }

// IDMap holds the temporary idmapped mounts of the app's layers while its
// rootfs is mounted in a user namespace.
func (d AppDir) IDMap() string { return d.join("fs", "idmap") }

// ImageVolume is the read-only mount of the app's i-th mount when it is an
// image volume.
func (d AppDir) ImageVolume(i int) string { return d.join("fs", "imagevols", strconv.Itoa(i)) }

func (d AppDir) join(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}
