package stage0

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCheckCheckpointDir(t *testing.T) {
	d := t.TempDir()
	empty := filepath.Join(d, "empty")
	full := filepath.Join(d, "full")
	file := filepath.Join(d, "file")
	link := filepath.Join(d, "link")
	for _, p := range []string{empty, full} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	if err := checkCheckpointDir(empty); err != nil {
		t.Errorf("an empty directory: %v", err)
	}
	for _, p := range []string{"", "rel/dir", full, file, link, filepath.Join(d, "missing"), empty + "/", d + "/../" + filepath.Base(d) + "/empty"} {
		if err := checkCheckpointDir(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkCheckpointDir(%q) = %v, want ErrInvalid", p, err)
		}
	}
}

func TestCriuVersion(t *testing.T) {
	d := t.TempDir()
	fake := func(name, out string) string {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"'\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		criu, want string
	}{
		{fake("new", "Version: 4.1.1"), "4.1.1"},
		{fake("exact", "Version: 3.15"), "3.15.0"},
	} {
		r := &Runtime{cfg: Config{Criu: tc.criu}}
		p, v, err := r.Criu(context.Background())
		if err != nil || p != tc.criu || v != tc.want {
			t.Errorf("Criu() with %s = %q, %q, %v; want version %s", tc.criu, p, v, err, tc.want)
		}
	}
	for _, criu := range []string{fake("old", "Version: 3.14.2"), fake("mute", "criu"), filepath.Join(d, "missing")} {
		r := &Runtime{cfg: Config{Criu: criu}}
		if _, _, err := r.Criu(context.Background()); !errors.Is(err, ErrCheckpointUnsupported) {
			t.Errorf("Criu() with %s: %v, want ErrCheckpointUnsupported", criu, err)
		}
	}
	// a criu that never answers fails at the caller's deadline
	hung := filepath.Join(d, "hung")
	if err := os.WriteFile(hung, []byte("#!/bin/sh\nexec sleep 600\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	_, _, err := (&Runtime{cfg: Config{Criu: hung}}).Criu(ctx)
	cancel()
	if !errors.Is(err, ErrCheckpointUnsupported) || time.Since(start) > 5*time.Second {
		t.Errorf("Criu() with a hung criu: %v after %v, want ErrCheckpointUnsupported at the deadline", err, time.Since(start))
	}
	r := &Runtime{cfg: Config{Criu: fake("old2", "Version: 3.14")}}
	if err := r.CheckpointPod(context.Background(), "x", CheckpointOptions{Dir: d + "/nope", Apps: []string{"a"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckpointPod into a missing directory: %v, want ErrInvalid", err)
	}
	empty := t.TempDir()
	if err := r.CheckpointPod(context.Background(), "x", CheckpointOptions{Dir: empty, Apps: []string{"a"}}); !errors.Is(err, ErrCheckpointUnsupported) {
		t.Errorf("CheckpointPod with criu 3.14: %v, want ErrCheckpointUnsupported", err)
	}
	if err := r.CheckpointPod(context.Background(), "x", CheckpointOptions{Dir: empty, Apps: []string{"a", "a"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckpointPod of an app twice: %v, want ErrInvalid", err)
	}
}

// TestInTree: a checkpoint's files must not be reached through a symlinked
// directory.
func TestInTree(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o700))
	must(os.Symlink(filepath.Join(dir, "checkpoint"), filepath.Join(dir, "link")))
	for p, want := range map[string]bool{
		filepath.Join(dir, "rootfs-diff.tar"):             true,
		filepath.Join(dir, "checkpoint", "inventory.img"): true,
		filepath.Join(dir, "link", "inventory.img"):       false,
		filepath.Join(dir, "..", "x", "inventory.img"):    false,
		"/etc/passwd": false,
	} {
		if got := inTree(dir, p); got != want {
			t.Errorf("inTree(%s): %v, want %v", p, got, want)
		}
	}
	if !inTree(dir+"/", filepath.Join(dir, "checkpoint", "inventory.img")) {
		t.Error("inTree with a trailing slash")
	}
}

// TestContainerCheckpointIn: an image layer is a checkpoint only with the
// layout of one; a layer that has it but a bad manifest is an error.
func TestContainerCheckpointIn(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(CheckpointManifestFile, "some application's own file")
	if cc, err := ContainerCheckpointIn(dir); cc != nil || err != nil {
		t.Errorf("a layer with only checkpoint.json: %v, %v; want no checkpoint", cc, err)
	}
	write("spec.dump", "{}")
	if err := os.Mkdir(filepath.Join(dir, "checkpoint"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ContainerCheckpointIn(dir); !errors.Is(err, ErrInvalid) {
		t.Errorf("a checkpoint's layout with a bad manifest: %v, want ErrInvalid", err)
	}
}

// TestContainerCheckpointInHostileManifest: the checkpoint.json of an
// image layer (pulled, hostile) is read only if it is a regular file: a
// symlink must not make the host's files read (/dev/zero would fill the
// memory), a FIFO must not block the read for good.
func TestContainerCheckpointInHostileManifest(t *testing.T) {
	layer := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "spec.dump"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "checkpoint"), 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("symlink", func(t *testing.T) {
		dir := layer(t)
		host := filepath.Join(t.TempDir(), "host-file")
		if err := os.WriteFile(host, []byte(`{"version": 99}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(host, filepath.Join(dir, CheckpointManifestFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := ContainerCheckpointIn(dir); !errors.Is(err, ErrInvalid) {
			t.Errorf("checkpoint.json a symlink out of the layer: %v, want ErrInvalid (the host file was read)", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		dir := layer(t)
		fifo := filepath.Join(dir, CheckpointManifestFile)
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := ContainerCheckpointIn(dir)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("checkpoint.json a FIFO: %v, want ErrInvalid", err)
			}
		case <-time.After(5 * time.Second):
			// a writer that closes at once ends the read
			if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
				unix.Close(fd)
			}
			t.Fatal("reading a FIFO as checkpoint.json blocked")
		}
	})
}

// TestOpenContainerArchiveNotRegular: the archive's type is checked before
// it is opened (a FIFO blocked the open, so CreateContainer, forever); a
// symlink to a regular archive is followed.
func TestOpenContainerArchiveNotRegular(t *testing.T) {
	rt := newTestRuntime(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ckpt.tar")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rt.OpenContainerArchive("11111111-2222-4333-8444-555555555555", fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("a FIFO as archive: %v, want ErrInvalid", err)
		}
	case <-time.After(5 * time.Second):
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
		t.Fatal("opening a FIFO as checkpoint archive blocked")
	}
	regular := filepath.Join(dir, "real.tar")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.tar")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.OpenContainerArchive("11111111-2222-4333-8444-555555555555", link); !errors.Is(err, ErrPodNotFound) {
		t.Errorf("a symlink to a regular archive: %v, want it opened (then ErrPodNotFound)", err)
	}
}
