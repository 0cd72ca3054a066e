package stage0

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPodExists(t *testing.T) {
	rt, err := New(Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	const (
		running  = "aaaaaaaa-0000-4000-8000-000000000001"
		creating = "aaaaaaaa-0000-4000-8000-000000000002"
		garbage  = "aaaaaaaa-0000-4000-8000-000000000003"
		gone     = "aaaaaaaa-0000-4000-8000-000000000004"
	)
	for _, d := range []string{
		filepath.Join(rt.stateDir(dirRun), running),
		filepath.Join(rt.stateDir(dirPrepare), newPodPrefix+creating),
		filepath.Join(rt.stateDir(dirExitedGarbage), garbage),
	} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		id   string
		want bool
	}{
		{running, true},
		{creating, true},
		{garbage, true},
		{gone, false},
		{"not-a-pod-uuid", true}, // not stage0's to release
	}
	for _, tc := range tests {
		if got := rt.podExists(tc.id); got != tc.want {
			t.Errorf("podExists(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
