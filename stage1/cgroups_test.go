package main

import (
	"os"
	"testing"
)

// warmCgroupAttach must leave the supervisor in the cgroups it is in.
func TestWarmCgroupAttachMovesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	warmCgroupAttach()
	after, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("cgroups changed:\n%s\nbecame\n%s", before, after)
	}
}
