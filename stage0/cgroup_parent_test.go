package stage0

import (
	"errors"
	"testing"
)

// With systemd running the pods' cgroups, a pod's own cgroup parent must
// be a slice (its apps' scopes go in it); a shared or default one, or no
// systemd, is not checked.
func TestCheckCgroupParent(t *testing.T) {
	for _, c := range []struct {
		parent  string
		own     bool
		systemd bool
		ok      bool
	}{
		{"kubepods-burstable-pod1.slice", true, true, true},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice", true, true, true},
		{"/kubepods/burstable/pod1", true, true, false}, // a kubelet on the cgroupfs driver
		{"kubepods--pod1.slice", true, true, false},
		{"/kubepods/burstable/pod1", true, false, true}, // cgroupfs driver here
		{"/rkt", false, true, true},                     // rkt run's default: system.slice
		{"", true, true, true},
	} {
		err := checkCgroupParent(PodOptions{CgroupParent: c.parent, OwnCgroupParent: c.own}, c.systemd)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("checkCgroupParent(%q, own %v, systemd %v) = %v, want ok %v", c.parent, c.own, c.systemd, err, c.ok)
		}
	}
}
