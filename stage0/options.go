package stage0

import (
	"io"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// PodOptions are the pod-level settings of Prepare, Run and Sandbox.
type PodOptions struct {
	UUID         string                // pod UUID; empty: generated
	Hostname     string                // empty: "rkt-<uuid>"
	DNS          *schema.DNS           // resolv.conf content; nil: the host's /etc/resolv.conf (or CNI's DNS)
	Net          string                // "default" (empty), "host", "none" or comma-separated network names
	Ports        []schema.PortMapping  // ports published on the host
	SharedPID    bool                  // apps share one PID namespace held by the pod
	HostPID      bool                  // apps run in the host PID namespace
	HostIPC      bool                  // apps run in the host IPC namespace
	Sysctls      map[string]string     // namespaced sysctls for the pod
	CgroupParent string                // empty: Config.CgroupParent
	Volumes      []schema.Volume       // pod volumes that apps mount with Mount.Volume
	Annotations  map[string]string     // free-form metadata (CRI metadata lives here)
	UserNS       *schema.UserNamespace // a pod user namespace the apps join (idmapped rootfs); nil: the host's
	// Resources are limits of the pod cgroup as a whole (optional; with
	// the systemd driver the cgroup parent carries them).
	Resources *specs.LinuxResources
	// OwnCgroupParent says that CgroupParent holds this pod alone (the
	// kubelet's per-pod cgroup): with systemd, the pod's usage is read
	// from it rather than summed over its running apps' scopes.
	OwnCgroupParent bool
}

// PrepareOptions describe a pod with its apps.
type PrepareOptions struct {
	PodOptions
	Apps []AppOptions
}

// NamespaceMode says which PID namespace an app uses.
type NamespaceMode int

const (
	// NamespacePod uses the pod's namespace: the shared PID namespace when
	// the pod has one (PodOptions.SharedPID), the host's when HostPID, else
	// the app's own.
	NamespacePod NamespaceMode = iota
	// NamespaceContainer gives the app its own namespace.
	NamespaceContainer
	// NamespaceNode uses the host's namespace.
	NamespaceNode
	// NamespaceTarget joins the namespace of the app named by PIDTarget.
	NamespaceTarget
)

// Seccomp profile names for AppOptions.Seccomp.
const (
	SeccompDefault    = "runtime/default" // the built-in default profile (also "" and "docker/default")
	SeccompUnconfined = "unconfined"      // no filter
	// "localhost/<path>" loads a JSON profile (OCI LinuxSeccomp or Docker format) from path.
)

// AppOptions describe one app of a pod.
type AppOptions struct {
	Name  string // app name, unique in the pod; empty: derived from the image name
	Image string // image reference or ID, resolved through Config.Images

	Exec       []string // replaces the image's entrypoint (and cmd) when set
	Args       []string // replaces the image's cmd when set
	Env        []string // KEY=VALUE, added to (overriding) the image's environment
	WorkingDir string   // empty: the image's, else "/"
	// StopSignal asks the app to stop (before SIGKILL): a name or number
	// (see NormalizeSignal); empty: the image's STOPSIGNAL, else SIGTERM.
	StopSignal string

	User                string   // uid, user name, uid:gid or name:group; empty: the image's USER (root)
	Group               string   // gid or group name; overrides the user's primary group
	SupplementaryGroups []uint32 // extra groups
	// StrictGroups ignores the groups the image's /etc/group gives the
	// user (CRI SupplementalGroupsPolicy Strict).
	StrictGroups bool

	Mounts  []Mount  // bind mounts and volumes
	Devices []Device // host devices made available to the app

	Privileged      bool     // all capabilities, all devices, no seccomp, no masked/readonly paths
	CapsRetain      []string // when non-nil: exactly these capabilities (rkt --caps-retain); "ALL" allowed
	CapsAdd         []string // added to the default set; "ALL" allowed
	CapsDrop        []string // removed from the set; "ALL" allowed
	NoNewPrivileges bool     // set no_new_privs
	// Seccomp is a profile name: "" or SeccompDefault, SeccompUnconfined,
	// "localhost/<path>"; SeccompSpec, when set, wins.
	Seccomp         string
	SeccompSpec     *specs.LinuxSeccomp
	ReadonlyRootfs  bool
	MaskedPaths     []string // nil: the defaults; non-nil empty: none
	ReadonlyPaths   []string // nil: the defaults; non-nil empty: none
	ApparmorProfile string   // rejected when not empty and AppArmor is not available
	SelinuxLabel    string   // rejected when not empty and SELinux is not available

	Resources   *specs.LinuxResources // cpu, memory, pids... limits for the app cgroup
	OOMScoreAdj *int                  // clamped by stage1 to what may be set
	Rlimits     []specs.POSIXRlimit   // nil: the caller's, inherited; clamped to the caller's hard limits
	Sysctls     map[string]string     // namespaced sysctls for the app

	PIDMode   NamespaceMode // which PID namespace
	PIDTarget string        // app name for NamespaceTarget

	TTY       bool // allocate a terminal
	Stdin     bool // keep stdin open for attach
	StdinOnce bool // close stdin after the first attach ends

	LogPath     string            // CRI log file; empty: <app dir>/log
	Annotations map[string]string // free-form metadata

	// Prestart has AddApp create the app's container right away, in the
	// background, so that StartApp only has to run its process (the CRI
	// starts what it creates). Not recorded.
	Prestart bool `json:"-"`
	// RestoreFrom are the files of an app of a checkpoint
	// (CheckpointManifest.Files): AddApp gives the app that app's writable
	// layer, and its start restores the dumped process instead of running
	// one (RestorePod). Excludes Prestart. Not recorded.
	RestoreFrom *CheckpointFiles `json:"-"`
}

// Mount is a mount of a host path or a pod volume into an app.
type Mount struct {
	Volume      string   // pod volume name (PodOptions.Volumes); exclusive with Source
	Image       string   // image reference: mount the image's filesystem read-only (CRI image volume)
	SubPath     string   // with Image: mount only this directory of the image
	Source      string   // host path (bind mount) or, with Type, the mount source
	Destination string   // absolute path in the app
	Type        string   // "" or "bind": bind mount; else a filesystem type such as "tmpfs"
	Options     []string // extra mount options
	ReadOnly    bool
	// RecursiveReadOnly makes every submount read-only too.
	RecursiveReadOnly bool
	// Propagation is "private" (default), "rslave" or "rshared".
	Propagation string
}

// Device is a host device exposed to an app.
type Device struct {
	HostPath      string
	ContainerPath string // empty: HostPath
	Permissions   string // cgroup permissions, e.g. "rwm" (default)
}

// StopOptions tune Stop and StopApp.
type StopOptions struct {
	// Timeout is the grace period between SIGTERM and SIGKILL; 0 means the
	// default of 10s (for an immediate SIGKILL, e.g. CRI StopContainer with
	// timeout 0, set Force).
	Timeout time.Duration
	// Force kills right away: StopApp sends SIGKILL, Stop kills the pod's
	// supervisor (and with it its apps).
	Force bool
}

// GCOptions tune GC.
type GCOptions struct {
	GracePeriod    time.Duration // exited pods older than this are removed (rkt default 30m)
	ExpirePrepared time.Duration // prepared pods older than this are removed (rkt default 24h)
	// DebrisOnly collects only what a crash left that no owner can reach:
	// aborted prepares (unlocked pods in prepare/ and unlocked
	// prepare/.new-<uuid> dirs), interrupted deletions (unlocked pods in
	// garbage/), the network resources of vanished pods, and the
	// resources (network, mounts, processes) of pods in run/ whose start
	// was cut off with their stage0 and supervisor (they stay, exited, for
	// their owners to remove). Running, exited, exited-garbage and
	// prepared pods are left to their owners (the kubelet, the CLI's user);
	// GracePeriod and ExpirePrepared are ignored. For long-lived services
	// (rkt kubelet-service).
	DebrisOnly bool
	// Owned reports, from a pod's annotations, whether a long-lived owner
	// removes it when done with it (the kubelet-service's sandboxes: the
	// kubelet keeps a stopped one for its containers' statuses and logs
	// until it removes it). Those pods are collected as with DebrisOnly.
	Owned func(annotations map[string]string) bool
}

// GCResult reports what GC did.
type GCResult struct {
	Collected []string         // UUIDs moved to garbage or removed
	Released  []string         // UUIDs cut off while starting, resources released (DebrisOnly)
	Removed   []string         // UUIDs whose directories were deleted
	Errors    map[string]error // per pod failures (GC goes on with the others)
	Network   error            // failure to release what vanished pods held in the network (CNI, IPs, iptables)
}

// TermSize is a terminal size.
type TermSize struct {
	Width, Height uint16
}

// ExecOptions describe a process to run in a running app.
type ExecOptions struct {
	App    string // app name; empty: the only app of the pod
	Args   []string
	Env    []string // added to the app's environment
	Cwd    string   // empty: the app's working directory
	User   string   // empty: the app's user
	TTY    bool
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan TermSize
}

// AttachOptions describe an attach to a running app's stdio.
type AttachOptions struct {
	App    string // app name; empty: the only app of the pod
	TTY    bool
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize <-chan TermSize
}
