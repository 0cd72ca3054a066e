package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	systemddbus "github.com/coreos/go-systemd/v22/dbus"
)

// stage1ScopeName is the transient systemd scope that holds a pod's
// supervisor, so that restarting the service that started it (rkt
// kubelet-service, KillMode=control-group) does not kill the pod.
func stage1ScopeName(uuid string) string { return "rkt-stage1-" + uuid + ".scope" }

// stage1Slice is the slice of the supervisor's scope: the pod's cgroup
// parent when it is a slice, else system.slice.
func stage1Slice(parent string) string {
	if b := path.Base(parent); strings.HasSuffix(b, ".slice") {
		return b
	}
	return "system.slice"
}

// scopeStarter is the part of systemd's dbus API that creates a scope.
type scopeStarter interface {
	StartTransientUnitContext(ctx context.Context, name, mode string, props []systemddbus.Property, ch chan<- string) (int, error)
	Close()
}

// dialSystemd connects to systemd over the system bus.
func dialSystemd(ctx context.Context) (scopeStarter, error) {
	return systemddbus.NewWithContext(ctx)
}

// joinSystemdScope moves the supervisor into its own transient scope. It
// is called only when systemd is PID 1 (systemdRunning); on an error the
// caller goes on in the cgroup it was started in.
func joinSystemdScope(uuid, cgroupParent, podDir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return joinScope(ctx, dialSystemd, uuid, cgroupParent, podDir, os.Getpid())
}

// joinScope asks systemd (through dial) to create the pod's supervisor
// scope holding pid, and waits for the job's result. The scope requires
// the mounts the pod directory lives on, so that at shutdown systemd stops
// the supervisor (which holds the pod's lock and files open) before it
// unmounts them.
func joinScope(ctx context.Context, dial func(context.Context) (scopeStarter, error), uuid, cgroupParent, podDir string, pid int) error {
	name := stage1ScopeName(uuid)
	conn, err := dial(ctx)
	if err != nil {
		return fmt.Errorf("cannot connect to systemd to create scope %s: %w", name, err)
	}
	defer conn.Close()
	props := []systemddbus.Property{
		systemddbus.PropDescription("rkt pod " + uuid + " supervisor"),
		systemddbus.PropSlice(stage1Slice(cgroupParent)),
		systemddbus.PropPids(uint32(pid)),
		systemddbus.PropRequiresMountsFor(podDir),
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, name, "replace", props, done); err != nil {
		return fmt.Errorf("cannot create scope %s: %w", name, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			return fmt.Errorf("cannot create scope %s: systemd job %s", name, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cannot create scope %s: %w", name, errors.Join(errors.New("no answer from systemd"), ctx.Err()))
	}
}
