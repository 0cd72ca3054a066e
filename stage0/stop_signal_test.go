package stage0

import (
	"errors"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestNormalizeSignal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SIGQUIT", "SIGQUIT"}, {"quit", "SIGQUIT"}, {"3", "SIGQUIT"}, {"SIGTERM", "SIGTERM"},
		{"SIGCLD", "SIGCHLD"}, {"SIGIOT", "SIGABRT"}, {"SIGPOLL", "SIGIO"}, {"sigwinch", "SIGWINCH"},
		{"SIGRTMIN", "34"}, {"SIGRTMIN+1", "35"}, {"SIGRTMAX-14", "50"}, {"SIGRTMAX", "64"}, {"40", "40"},
		{"SIGNOPE", ""}, {"0", ""}, {"65", ""}, {"SIGRTMAX-40", ""}, {"SIGRTMIN+x", ""}, {"", ""},
	}
	for _, tc := range tests {
		got, err := NormalizeSignal(tc.in)
		if got != tc.want || (tc.want == "") != (err != nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("NormalizeSignal(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestAppStopSignal(t *testing.T) {
	img := &Image{ID: "sha256:x", Config: &v1.ConfigFile{Config: v1.Config{StopSignal: "SIGUSR1"}}}
	tests := []struct {
		opt  string
		img  *Image
		want string
		ok   bool
	}{
		{"", nil, "", true},
		{"", img, "SIGUSR1", true},
		{"quit", img, "SIGQUIT", true},
		{"bogus", img, "", false},
		{"", &Image{Config: &v1.ConfigFile{Config: v1.Config{StopSignal: "bogus"}}}, "", false},
	}
	for _, tc := range tests {
		got, err := appStopSignal(tc.opt, tc.img)
		if got != tc.want || tc.ok != (err == nil) {
			t.Errorf("appStopSignal(%q) = %q, %v; want %q ok=%v", tc.opt, got, err, tc.want, tc.ok)
		}
	}
}
