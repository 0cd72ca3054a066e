// Package schema holds the on-disk formats shared by stage0 (which writes the
// pod) and stage1 (which runs it). It must stay dependency-free apart from
// the OCI runtime-spec types so that the stage1 binary stays lean.
package schema

import (
	"errors"
	"fmt"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Version is written into every manifest this code produces.
const Version = "rkt/v1"

// ErrNewerVersion marks a manifest written by a newer rkt: refused, never
// misread.
var ErrNewerVersion = errors.New("manifest format is newer than this rkt")

// CheckVersion accepts the manifest versions this code reads: Version, and
// "" (none recorded). Readers of an older version migrate it here.
func CheckVersion(v string) error {
	if v == Version || v == "" {
		return nil
	}
	return fmt.Errorf("manifest format %q, this rkt reads %q: %w", v, Version, ErrNewerVersion)
}

// PodManifest describes a pod. stage0 writes it atomically; it is rewritten
// when apps are added or removed.
type PodManifest struct {
	Version   string        `json:"version"`
	UUID      string        `json:"uuid"`
	Apps      []App         `json:"apps"`
	Hostname  string        `json:"hostname,omitempty"`
	DNS       *DNS          `json:"dns,omitempty"`
	Net       string        `json:"net,omitempty"` // "default", "host", "none" or comma-separated network names
	Ports     []PortMapping `json:"ports,omitempty"`
	Volumes   []Volume      `json:"volumes,omitempty"`
	SharedPID bool          `json:"sharedPID,omitempty"` // apps share one PID namespace held by the pod
	HostPID   bool          `json:"hostPID,omitempty"`
	HostIPC   bool          `json:"hostIPC,omitempty"`
	// SharedShm: the apps bind the pod's /dev/shm (PodDir.Shm, a tmpfs
	// mounted at its start), as they share its IPC namespace. Pods of
	// earlier versions give each app a tmpfs of its own.
	SharedShm    bool              `json:"sharedShm,omitempty"`
	Sysctls      map[string]string `json:"sysctls,omitempty"` // namespaced sysctls applied to the pod
	CgroupParent string            `json:"cgroupParent,omitempty"`
	// OwnCgroupParent: the cgroup parent holds this pod alone (the
	// kubelet's per-pod cgroup), so its usage is the pod's. Without it the
	// parent may be shared (the default, /rkt), or the pod is older.
	OwnCgroupParent bool `json:"ownCgroupParent,omitempty"`
	// Resources are limits of the pod cgroup (<parent>/<uuid>) as a
	// whole, set by stage0 before stage1 starts (cgroupfs driver).
	Resources   *specs.LinuxResources `json:"resources,omitempty"`
	Annotations map[string]string     `json:"annotations,omitempty"`
	// UserNS, when set, gives the pod a user namespace with these mappings
	// that every app joins; nil keeps the apps in the host's.
	UserNS    *UserNamespace `json:"userNS,omitempty"`
	CreatedAt time.Time      `json:"createdAt"`
}

// App is one application of a pod: rkt-level metadata. How it runs is in the
// app's OCI runtime spec (AppSpecFile) that stage0 builds.
type App struct {
	Name        string            `json:"name"`
	Image       AppImage          `json:"image"`
	Annotations map[string]string `json:"annotations,omitempty"`
	LogPath     string            `json:"logPath,omitempty"` // CRI-format log file; default <app dir>/log
	Stdin       bool              `json:"stdin,omitempty"`
	StdinOnce   bool              `json:"stdinOnce,omitempty"`
	TTY         bool              `json:"tty,omitempty"`
	StopSignal  string            `json:"stopSignal,omitempty"` // signal that asks the app to stop, e.g. "SIGQUIT"; default SIGTERM
	CreatedAt   time.Time         `json:"createdAt"`
}

// AppImage names the image an app runs.
type AppImage struct {
	Name   string   `json:"name"`             // the reference the user gave, normalized
	ID     string   `json:"id"`               // sha256:<config digest>
	Layers []string `json:"layers,omitempty"` // treestore directories, lowest layer first
}

// DNS is the pod's resolv.conf content.
type DNS struct {
	Servers  []string `json:"servers,omitempty"`
	Searches []string `json:"searches,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// PortMapping publishes a pod port on the host.
type PortMapping struct {
	Protocol      string `json:"protocol"` // tcp, udp, sctp
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Volume is a pod-level volume that apps mount.
type Volume struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // "host" or "empty"
	Source   string `json:"source,omitempty"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// AppState is the lifecycle state of an app.
type AppState string

const (
	AppCreated AppState = "created"
	AppRunning AppState = "running"
	AppExited  AppState = "exited"
	AppUnknown AppState = "unknown"
)

// AppStatus is what stage1 records about an app. It is written atomically
// (temp file, fsync, rename) on every change.
type AppStatus struct {
	Name       string    `json:"name"`
	State      AppState  `json:"state"`
	Pid        int       `json:"pid,omitempty"`
	ExitCode   int       `json:"exitCode"`
	Signal     string    `json:"signal,omitempty"` // e.g. "SIGKILL" when killed by a signal
	OOMKilled  bool      `json:"oomKilled,omitempty"`
	Reason     string    `json:"reason,omitempty"` // "Completed", "Error", "OOMKilled", ...
	Message    string    `json:"message,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitempty"`
}

// UserNamespace is a pod's user namespace: one uid and one gid range, each
// mapping container ID 0.
type UserNamespace struct {
	UIDMappings []specs.LinuxIDMapping `json:"uidMappings"`
	GIDMappings []specs.LinuxIDMapping `json:"gidMappings"`
}

// Well-known annotations, set by whoever creates a pod or app and shown by
// the CLI.
const (
	// AnnotationDisplayName is a human name of a pod or app that is not
	// its rkt name, e.g. "namespace/name" of a Kubernetes pod or the
	// container name of a Kubernetes container.
	AnnotationDisplayName = "rkt.io/display-name"
)
