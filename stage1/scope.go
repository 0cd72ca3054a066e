package main

import (
	"context"
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

// joinSystemdScope moves the supervisor into its own transient scope when
// systemd is PID 1; failures are logged, never fatal.
func joinSystemdScope(uuid, cgroupParent string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := systemddbus.NewWithContext(ctx)
	if err != nil {
		logf("systemd: cannot connect to dbus, staying in the caller's cgroup: %v", err)
		return
	}
	defer conn.Close()
	props := []systemddbus.Property{
		systemddbus.PropDescription("rkt pod " + uuid + " supervisor"),
		systemddbus.PropSlice(stage1Slice(cgroupParent)),
		systemddbus.PropPids(uint32(os.Getpid())),
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, stage1ScopeName(uuid), "replace", props, done); err != nil {
		logf("systemd: cannot create scope %s: %v", stage1ScopeName(uuid), err)
		return
	}
	select {
	case res := <-done:
		if res != "done" {
			logf("systemd: scope %s: %s", stage1ScopeName(uuid), res)
		}
	case <-ctx.Done():
		logf("systemd: scope %s: %v", stage1ScopeName(uuid), fmt.Errorf("timed out: %w", ctx.Err()))
	}
}
