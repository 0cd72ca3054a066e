package proc

import (
	"os"
	"slices"
	"testing"
)

func TestPIDs(t *testing.T) {
	pids, err := PIDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) || !slices.Contains(pids, 1) {
		t.Fatalf("PIDs() = %d pids without this process or pid 1", len(pids))
	}
}
