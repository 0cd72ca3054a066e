// Command stage1 is rkt's pod supervisor: one process per pod that holds the
// pod's namespaces, runs its apps as libcontainer containers and answers
// stage0 over a unix socket (see package stage1/control for the contract).
//
//	stage1 run --pod-dir=DIR [--mode=run|sandbox] [--debug]
//	stage1 gc --pod-dir=DIR [--debug]
//	stage1 userns --pod-dir=DIR [--netns=PATH] (creates <pod>/userns from the manifest)
//
// libcontainer re-executes this binary as `stage1 init` inside every new
// container; `stage1 pidns` (pidns_holder.go, C) is the reaper of a pod's shared PID
// namespace.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	_ "github.com/opencontainers/cgroups/devices"
	"golang.org/x/sys/unix"
)

func init() {
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

var debug bool

func debugf(format string, args ...any) {
	if debug {
		log.Printf("debug: "+format, args...)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: %s run|gc --pod-dir=DIR [--mode=run|sandbox] [--debug]\n", os.Args[0])
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix(fmt.Sprintf("stage1[%d]: ", os.Getpid()))
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
	fs.BoolVar(&debug, "debug", false, "log debug messages")
	netns := fs.String("netns", "", "userns: also create the pod's network namespace inside it and bind-mount it here")
	if err := fs.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if *podDir == "" {
		usage()
		os.Exit(2)
	}
	var err error
	switch cmd {
	case "run":
		if *mode != modeRun && *mode != modeSandbox {
			log.Printf("unknown --mode %q", *mode)
			os.Exit(2)
		}
		err = runSupervisor(*podDir, *mode)
	case "gc":
		err = gcPod(*podDir)
	case "userns":
		err = createUserNS(*podDir, *netns)

	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		log.Printf("%s: %v", cmd, err)
		os.Exit(1)
	}
}
