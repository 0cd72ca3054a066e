package stage0

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

func TestCheckUserNS(t *testing.T) {
	one := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 100000, Size: 65536}}
	tests := []struct {
		name string
		u    *schema.UserNamespace
		ok   bool
	}{
		{"none", nil, true},
		{"valid", &schema.UserNamespace{UIDMappings: one, GIDMappings: one}, true},
		{"no gid mapping", &schema.UserNamespace{UIDMappings: one}, false},
		{"two uid mappings", &schema.UserNamespace{UIDMappings: append(one, one...), GIDMappings: one}, false},
		{"root unmapped", &schema.UserNamespace{UIDMappings: []specs.LinuxIDMapping{{ContainerID: 1, HostID: 1000, Size: 10}}, GIDMappings: one}, false},
		{"empty range", &schema.UserNamespace{UIDMappings: one, GIDMappings: []specs.LinuxIDMapping{{HostID: 1000}}}, false},
		{"wraps", &schema.UserNamespace{UIDMappings: []specs.LinuxIDMapping{{HostID: 1 << 31, Size: 1 << 31}}, GIDMappings: one}, false},
	}
	for _, tc := range tests {
		err := CheckUserNS(tc.u)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: checkUserNS = %v, want ok=%v (or ErrInvalid)", tc.name, err, tc.ok)
		}
	}
}

func TestParseIDMapping(t *testing.T) {
	tests := []struct {
		in   string
		want specs.LinuxIDMapping
		ok   bool
	}{
		{"0:100000:65536", specs.LinuxIDMapping{ContainerID: 0, HostID: 100000, Size: 65536}, true},
		{"0:100000", specs.LinuxIDMapping{}, false},
		{"0:-1:5", specs.LinuxIDMapping{}, false},
		{"a:b:c", specs.LinuxIDMapping{}, false},
		{"0:1:4294967296", specs.LinuxIDMapping{}, false},
	}
	for _, tc := range tests {
		got, err := ParseIDMapping(tc.in)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseIDMapping(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestCheckReachable(t *testing.T) {
	u := &schema.UserNamespace{
		UIDMappings: []specs.LinuxIDMapping{{HostID: 100000, Size: 65536}},
		GIDMappings: []specs.LinuxIDMapping{{HostID: 100000, Size: 65536}},
	}
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(root), root, filepath.Join(root, "a"), dir} {
		os.Chmod(d, 0o711)
	}
	if err := checkReachable(dir, u); err != nil && os.Geteuid() == 0 {
		// / and the temp dir's parents are searchable on any sane host
		t.Fatalf("searchable path refused: %v", err)
	}
	os.Chmod(filepath.Join(root, "a"), 0o700)
	if err := checkReachable(dir, u); !errors.Is(err, ErrInvalid) {
		t.Fatalf("checkReachable through a 0700 directory = %v, want ErrInvalid", err)
	}
	if os.Geteuid() == 0 {
		// owned by a mapped user: searchable by the app's root
		os.Chown(filepath.Join(root, "a"), 100000, 100000)
		if err := checkReachable(dir, u); err != nil {
			t.Fatalf("directory owned by the mapped root refused: %v", err)
		}
	}
}
