// Command stage1 is rkt's pod supervisor: one process per pod that holds the
// pod's namespaces, runs its apps as libcontainer containers and answers
// stage0 over a unix socket (see package stage1/control for the contract).
//
//	stage1 run --pod-dir=DIR [--mode=run|sandbox] [--debug]
//	stage1 gc --pod-dir=DIR [--debug]
//	stage1 userns --pod-dir=DIR [--netns=PATH] (creates <pod>/userns from the manifest)
//	stage1 attach-mounts TARGET... (attach_mounts.go, C: stage0's mounts into a supervisor's mount namespace)
//	stage1 lean|resume --pod-dir=DIR --state-fd=N ... (an idle supervisor re-executes itself so; refresh.go)
//
// libcontainer re-executes this binary as `stage1 init` inside every new
// container; `stage1 pidns` (pidns_holder.go, C) is the reaper of a pod's shared PID
// namespace.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	_ "github.com/opencontainers/cgroups/devices"
	"golang.org/x/sys/unix"
)

func init() {
	// main runs on the main thread: the supervisor's spawner (spawner.go).
	runtime.LockOSThread()
	// libcontainer's container init: must run before anything else and
	// never returns.
	if len(os.Args) > 1 && os.Args[1] == "init" {
		runtime.GOMAXPROCS(1)
		runtime.LockOSThread()
		// This is the container's process (nsexec already forked it with
		// CLONE_PARENT: its parent is the supervisor's spawner thread).
		// libcontainer's ParentDeathSignal does not survive that fork, so
		// set it here; libcontainer keeps it across the user switch.
		unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
		libcontainer.Init()
	}
}

// logLevel is Info, Debug with --debug. The log goes to stderr, which
// stage0 points at <pod>/stage1.log.
var logLevel = new(slog.LevelVar)

func usage() {
	fmt.Fprintf(os.Stderr, "usage: %s run|gc --pod-dir=DIR [--mode=run|sandbox] [--debug]\n", os.Args[0])
}

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel})).With("stage1", os.Getpid()))
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd := os.Args[1]
	if cmd == "userns-hold" {
		os.Exit(runUserNSHolder())
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	podDir := fs.String("pod-dir", "", "absolute path of the pod directory")
	mode := fs.String("mode", "run", "run: start every app and exit when all have exited; sandbox: start none, live until shut down")
	debug := fs.Bool("debug", false, "log debug messages")
	netns := fs.String("netns", "", "userns: also create the pod's network namespace inside it and bind-mount it here")
	refresh := fs.Duration("refresh-delay", defaultRefreshDelay, "run: re-execute the supervisor (a fresh heap) after this long with nothing in flight; 0: never")
	stateFd := fs.Int("state-fd", -1, "resume: the descriptor of the supervisor's state")
	stopSig := fs.Int("signal", 0, "resume: the signal that asks the pod to stop, received by stage1 lean")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if *podDir == "" {
		usage()
		os.Exit(2)
	}
	if *debug {
		logLevel.Set(slog.LevelDebug)
	}
	var err error
	switch cmd {
	case "run":
		if *mode != modeRun && *mode != modeSandbox {
			slog.Error("unknown --mode", "mode", *mode)
			os.Exit(2)
		}
		err = runSupervisor(*podDir, *mode, *refresh)
	case "resume":
		err = resumeSupervisor(*stateFd, syscall.Signal(*stopSig))
	case "gc":
		err = gcPod(*podDir)
	case "userns":
		err = createUserNS(*podDir, *netns)

	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		slog.Error("stage1 "+cmd+" failed", "error", err)
		os.Exit(1)
	}
}
