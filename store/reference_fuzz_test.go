package store

import (
	"errors"
	"testing"
)

// FuzzParseReference: ParseReference refuses bad input with ErrInvalidRef
// and never panics; what it accepts is normalized (parsing its String()
// gives it back) and usable as a registry reference.
func FuzzParseReference(f *testing.F) {
	for _, s := range []string{
		"busybox", "docker://quay.io/x/y:1", "busybox@sha256:" + sixtyFour,
		"localhost:5000/a/b:c@sha256:" + sixtyFour, "Index.Docker.IO/x", "registry-1.docker.io/library/x:1",
		"127.0.0.1:5000/x", "[::1]:5000/x:y", "a/b/c/d:e", "x:", "@", "docker://", "UPPER/case",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReference(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("ParseReference(%q): error %v is not ErrInvalidRef", s, err)
			}
			return
		}
		if r.Registry == "" || r.Repository == "" || (r.Tag == "" && r.Digest == "") {
			t.Fatalf("ParseReference(%q) = %+v: incomplete", s, r)
		}
		again, err := ParseReference(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseReference(%q) = %+v, but its String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		if _, err := r.remoteRef(r.Registry, false); err != nil {
			t.Fatalf("ParseReference(%q) = %+v has no remote reference: %v", s, r, err)
		}
	})
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
