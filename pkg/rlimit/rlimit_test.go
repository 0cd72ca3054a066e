package rlimit

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"RLIMIT_NOFILE", "RLIMIT_NOFILE", true},
		{"nofile", "RLIMIT_NOFILE", true},
		{"rlimit_nproc", "RLIMIT_NPROC", true},
		{"RLIMIT_NOPE", "RLIMIT_NOPE", false},
	}
	for _, tc := range tests {
		if got, ok := Canonical(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestClamp(t *testing.T) {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		t.Fatal(err)
	}
	if cur.Max == unix.RLIM_INFINITY || cur.Max < 16 {
		t.Skipf("RLIMIT_NOFILE hard limit %d cannot be exceeded or is too low", cur.Max)
	}
	tests := []struct {
		name               string
		in                 specs.POSIXRlimit
		wantSoft, wantHard uint64
		changed            bool
	}{
		{"above", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Soft: cur.Max + 10, Hard: cur.Max + 10}, cur.Max, cur.Max, true},
		{"hard above", specs.POSIXRlimit{Type: "nofile", Soft: 8, Hard: cur.Max + 1}, 8, cur.Max, true},
		{"soft above hard", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Soft: 12, Hard: 10}, 10, 10, true},
		{"within", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Soft: 8, Hard: 16}, 8, 16, false},
		{"unknown", specs.POSIXRlimit{Type: "RLIMIT_NOPE", Soft: 1 << 62, Hard: 1 << 62}, 1 << 62, 1 << 62, false},
	}
	for _, tc := range tests {
		r := tc.in
		if changed := Clamp(&r); changed != tc.changed || r.Soft != tc.wantSoft || r.Hard != tc.wantHard {
			t.Errorf("%s: Clamp = %v, %d/%d; want %v, %d/%d", tc.name, changed, r.Soft, r.Hard, tc.changed, tc.wantSoft, tc.wantHard)
		}
	}
}
