package control

import (
	"errors"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// Operations of the control protocol.
const (
	OpStart      = "start"
	OpPrestart   = "prestart"
	OpStop       = "stop"
	OpRemove     = "remove"
	OpStatus     = "status"
	OpReopen     = "reopen-log"
	OpUpdate     = "update-resources"
	OpExec       = "exec"
	OpAttach     = "attach"
	OpShutdown   = "shutdown"
	OpCheckpoint = "checkpoint"
)

// Error codes carried in Response.Code.
const (
	CodeNotFound   = "not-found"
	CodeRunning    = "running"
	CodeNotRunning = "not-running"
	CodeInvalid    = "invalid"
)

// Sentinel errors returned (wrapped) by Client methods; use errors.Is.
var (
	// ErrAppNotFound: the pod has no app of that name.
	ErrAppNotFound = errors.New("app not found")
	// ErrAppRunning: the operation needs a stopped app.
	ErrAppRunning = errors.New("app is running")
	// ErrAppNotRunning: the operation needs a running app.
	ErrAppNotRunning = errors.New("app is not running")
	// ErrInvalid: the request was malformed.
	ErrInvalid = errors.New("invalid request")
	// ErrNoSupervisor: no supervisor answers on the pod's socket.
	ErrNoSupervisor = errors.New("stage1 supervisor is not running")
)

// Request is the JSON header of every call.
type Request struct {
	Op         string                `json:"op"`
	App        string                `json:"app,omitempty"`
	Timeout    time.Duration         `json:"timeout,omitempty"` // stop/shutdown grace period
	Resources  *specs.LinuxResources `json:"resources,omitempty"`
	Exec       *ExecSpec             `json:"exec,omitempty"`
	Attach     *AttachSpec           `json:"attach,omitempty"`
	Manifest   *schema.App           `json:"manifest,omitempty"` // prestart: the app, maybe not in the pod manifest yet
	Checkpoint *CheckpointSpec       `json:"checkpoint,omitempty"`
	// Deadline is a start's or an exec's: the caller's. A container start,
	// a restore's criu or an exec's process still being set up well past it
	// is killed and the call fails.
	Deadline time.Time `json:"deadline,omitzero"`
}

// CheckpointSpec is what a checkpoint request dumps, and where.
type CheckpointSpec struct {
	// Apps are the running apps to dump; all are paused before the first
	// dump and resumed before the answer.
	Apps []string `json:"apps"`
	// Dir is an existing, empty directory (absolute): the supervisor writes
	// <Dir>/<app>/criu/ (CRIU images) and <Dir>/<app>/rootfs.tar (the app's
	// overlay upper directory as an OCI layer) for every app, nothing else.
	Dir string `json:"dir"`
	// Criu is the absolute path of the criu binary to run.
	Criu string `json:"criu"`
	// Deadline: no dump starts after it (the call then fails).
	Deadline time.Time `json:"deadline,omitzero"`
}

// ExecSpec is the process part of an exec request.
type ExecSpec struct {
	Args  []string `json:"args"`
	Env   []string `json:"env,omitempty"`  // added to (and overriding) the app's environment
	Cwd   string   `json:"cwd,omitempty"`  // default: the app's working directory
	User  string   `json:"user,omitempty"` // "uid[:gid]" or a name from the app's /etc/passwd; default: the app's user
	TTY   bool     `json:"tty,omitempty"`
	Stdin bool     `json:"stdin,omitempty"`
}

// AttachSpec says which streams an attach wants.
type AttachSpec struct {
	Stdin  bool `json:"stdin,omitempty"`
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
}

// Response is the JSON answer to every call.
type Response struct {
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	// Errno is the system error behind Error, if any (e.g. ENOSPC); the
	// client wraps it so that errors.Is(err, syscall.ENOSPC) holds.
	Errno  syscall.Errno      `json:"errno,omitempty"`
	Status []schema.AppStatus `json:"status,omitempty"`
}

// TermSize is a terminal size for FrameResize.
type TermSize struct {
	Width  uint16 `json:"width"`
	Height uint16 `json:"height"`
}

// ExitResult ends an exec or attach stream.
type ExitResult struct {
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
}
