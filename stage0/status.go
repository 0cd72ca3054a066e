package stage0

import (
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// PodState is the lifecycle state of a pod, as rkt names them.
type PodState string

// Pod states. The directory a pod is in and whether its lock is held decide
// its state.
const (
	PodEmbryo         PodState = "embryo"          // being created
	PodPreparing      PodState = "preparing"       // prepare/, locked
	PodAbortedPrepare PodState = "aborted prepare" // prepare/, unlocked: a prepare died
	PodPrepared       PodState = "prepared"        // prepared/
	PodRunning        PodState = "running"         // run/, locked by stage1
	PodExited         PodState = "exited"          // run/, unlocked
	PodExitedGarbage  PodState = "exited garbage"  // exited-garbage/
	PodGarbage        PodState = "garbage"         // garbage/
	PodDeleting       PodState = "deleting"        // garbage/, locked by a GC
)

// PodStatus is a pod's state, manifest, apps and network.
type PodStatus struct {
	UUID     string
	State    PodState
	Dir      string              // the pod directory
	Manifest *schema.PodManifest // nil while the pod is an embryo
	Apps     []AppStatus         // in manifest order
	Networks []NetworkStatus     // empty for host networking or before setup
	// Stage1PID is the supervisor's pid (0 when not running).
	Stage1PID  int
	CreatedAt  time.Time // pod creation
	StartedAt  time.Time // stage1 start (zero if never started)
	FinishedAt time.Time // when the pod was seen exited (zero while running)
	// ExitCode is the first non-zero exit code of the apps, else 0.
	ExitCode int
}

// AppStatus is an app's manifest entry and its state as recorded by stage1.
type AppStatus struct {
	schema.AppStatus
	App      schema.App // the app manifest entry
	ImageRef string     // the image name the app was created from
	LogPath  string     // absolute log path
}

// NetworkStatus is one network a pod is attached to.
type NetworkStatus struct {
	Name      string
	Interface string
	IPs       []string // CIDR notation, e.g. 172.16.28.2/24
	Gateway   string
}
