package store

import (
	"errors"
	"strings"
	"testing"
)

func putFake(t *testing.T, s *Store, id string, names ...string) {
	t.Helper()
	err := s.update(func(tx *txn) error {
		r := &imageRecord{Image: Image{ID: id}, ConfigRaw: []byte(`{"os":"linux"}`)}
		for _, n := range names {
			if err := tx.setRef(r, n, strings.Contains(n, "@")); err != nil {
				return err
			}
		}
		return tx.putImage(r)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolveImage(t *testing.T) {
	s := newStore(t)
	idA := "sha256:abcd1" + strings.Repeat("0", 59)
	idB := "sha256:abcd2" + strings.Repeat("0", 59)
	idC := "sha256:cafe" + strings.Repeat("1", 60)
	digest := "sha256:" + strings.Repeat("9", 64)
	putFake(t, s, idA, "docker.io/library/busybox:latest", "docker.io/library/busybox@"+digest)
	putFake(t, s, idB, "quay.io/x/y:1")
	putFake(t, s, idC, "docker.io/library/cafe:latest")
	for _, tc := range []struct {
		ref  string
		want string
		err  error
	}{
		{ref: idA, want: idA},
		{ref: "abcd1", want: idA},
		{ref: "sha256:abcd2", want: idB},
		{ref: "abcd", err: ErrAmbiguousRef},
		{ref: "sha256:abc", err: ErrAmbiguousRef},
		{ref: "busybox", want: idA},
		{ref: "busybox:latest", want: idA},
		{ref: "docker://busybox", want: idA},
		{ref: "docker.io/library/busybox", want: idA},
		{ref: "index.docker.io/library/busybox:latest", want: idA},
		{ref: "busybox@" + digest, want: idA},
		{ref: "busybox:latest@" + digest, want: idA},
		{ref: "quay.io/x/y:1", want: idB},
		{ref: "quay.io/x/y", err: ErrImageNotFound},
		{ref: "cafe", want: idC}, // hex-looking: ID prefix and name agree
		{ref: "beef", err: ErrImageNotFound},
		{ref: "sha256:", err: ErrImageNotFound},
		{ref: "sha256:xyz", err: ErrImageNotFound},
		{ref: "Not A Ref!", err: ErrImageNotFound},
	} {
		got, err := s.ResolveImage(tc.ref)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("ResolveImage(%q) err = %v, want %v", tc.ref, err, tc.err)
			}
			continue
		}
		if err != nil || got.ID != tc.want {
			t.Errorf("ResolveImage(%q) = %v, %v; want %s", tc.ref, got, err, tc.want)
		}
	}
	var amb *AmbiguousError
	if _, err := s.ResolveImage("abcd"); !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Errorf("ambiguous error %v does not list both candidates", err)
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                     "docker.io/library/busybox:latest",
		"busybox:1.36":                "docker.io/library/busybox:1.36",
		"docker://alpine":             "docker.io/library/alpine:latest",
		"user/app":                    "docker.io/user/app:latest",
		"index.docker.io/library/x:1": "docker.io/library/x:1",
		"registry.k8s.io/pause:3.10":  "registry.k8s.io/pause:3.10",
		"127.0.0.1:5000/a/b":          "127.0.0.1:5000/a/b:latest",
		"localhost:5000/a@sha256:" + strings.Repeat("1", 64): "localhost:5000/a@sha256:" + strings.Repeat("1", 64),
	} {
		got, err := NormalizeName(in)
		if err != nil || got != want {
			t.Errorf("NormalizeName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := NormalizeName("UPPER/case"); !errors.Is(err, ErrInvalidRef) {
		t.Errorf("invalid name: err = %v", err)
	}
}
