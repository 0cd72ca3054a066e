package appuser

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestLookup(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("passwd", "root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www:/var/www:/bin/false\n")
	write("group", "root:x:0:\nwww-data:x:33:\nextra:x:50:www-data\n")
	// a symlink pointing out of the rootfs is resolved inside it
	escape := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(escape, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(escape, "etc", "passwd")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		rootfs, spec string
		uid, gid     int
		home         string
		sgids        []int
		wantErr      bool
	}{
		{rootfs: root, spec: "", uid: 0, gid: 0, home: "/root"},
		{rootfs: root, spec: "www-data", uid: 33, gid: 33, home: "/var/www", sgids: []int{50}},
		{rootfs: root, spec: "www-data:extra", uid: 33, gid: 50, home: "/var/www"},
		{rootfs: root, spec: "1234:4321", uid: 1234, gid: 4321, home: "/"},
		{rootfs: root, spec: "nosuchuser", wantErr: true},
		{rootfs: "", spec: "1000", uid: 1000, gid: 0, home: "/"},
		{rootfs: "", spec: "daemon", wantErr: true},
		{rootfs: escape, spec: "root", wantErr: true}, // the host's /etc/passwd is not read
	}
	for _, tc := range tests {
		u, err := Lookup(tc.rootfs, tc.spec)
		if tc.wantErr {
			if err == nil {
				t.Errorf("Lookup(%q, %q) = %+v, want an error", tc.rootfs, tc.spec, u)
			}
			continue
		}
		if err != nil {
			t.Errorf("Lookup(%q, %q): %v", tc.rootfs, tc.spec, err)
			continue
		}
		if u.Uid != tc.uid || u.Gid != tc.gid || u.Home != tc.home || !slices.Equal(u.Sgids, tc.sgids) {
			t.Errorf("Lookup(%q, %q) = uid %d gid %d home %q sgids %v, want %d %d %q %v",
				tc.rootfs, tc.spec, u.Uid, u.Gid, u.Home, u.Sgids, tc.uid, tc.gid, tc.home, tc.sgids)
		}
	}
}

// TestLookupNotRegular: an image's /etc/passwd or /etc/group that is a
// FIFO or a device (an image may hold both) is refused, not read: opening
// a FIFO blocked the create or exec forever, /dev/zero or /dev/urandom
// would be read without end.
func TestLookupNotRegular(t *testing.T) {
	for _, name := range []string{"passwd", "group"} {
		for _, kind := range []string{"fifo", "dir", "device"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				root := t.TempDir()
				etc := filepath.Join(root, "etc")
				if err := os.MkdirAll(etc, 0o700); err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(etc, name)
				var err error
				switch kind {
				case "fifo":
					err = unix.Mkfifo(p, 0o600)
				case "dir":
					err = os.Mkdir(p, 0o700)
				case "device": // the host's /dev/null
					if os.Geteuid() != 0 {
						t.Skip("mknod needs root")
					}
					err = unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
				}
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					_, err := Lookup(root, "1:1")
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil {
						t.Errorf("Lookup with a %s as /etc/%s succeeded", kind, name)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("Lookup with a %s as /etc/%s blocks", kind, name)
					if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil { // unblock it
						w.Close()
					}
					<-done
				}
			})
		}
	}
}

// TestLookupBoundedMemory: an image's /etc/group is hostile input. A 2 MB
// gzip layer can hold a 2 GB group line ("g:x:5:a,a,a,..."), which the
// parser read whole and split into a string per member (16 bytes of header
// each): gigabytes in the kubelet-service's CreateContainer. A file past
// the cap is refused, with memory use bounded whatever its size.
func TestLookupBoundedMemory(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(etc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const size = 24 << 20
	line := append([]byte("big:x:5:"), bytes.Repeat([]byte("root,"), size/5)...)
	if err := os.WriteFile(filepath.Join(etc, "group"), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	line = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Lookup(root, "root")
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("Lookup of a %d MiB /etc/group allocated %d MiB (err %v)", size>>20, alloc>>20, err)
	}
	if err == nil {
		t.Error("a /etc/group past the cap was accepted")
	}
}

// An id the image's files give that the kernel takes for "no change"
// (-1, 2^32-1) is refused: the process would stay root.
func TestLookupIDRange(t *testing.T) {
	for _, files := range [][2]string{
		{"a:x:4294967295:0::/:\n", ""},
		{"a:x:-1:0::/:\n", ""},
		{"a:x:1000:1000::/:\n", "g:x:4294967295:a\n"},
		{"a:x:1000:-1::/:\n", ""},
	} {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte(files[0]), 0o600)
		os.WriteFile(filepath.Join(root, "etc", "group"), []byte(files[1]), 0o600)
		if u, err := Lookup(root, "a"); !errors.Is(err, ErrIDRange) {
			t.Errorf("passwd %q group %q: Lookup(a) = %+v, %v; want ErrIDRange", files[0], files[1], u, err)
		}
	}
}

// TestLookupRacingSymlink: while Lookup runs, a process of the container
// keeps swapping the rootfs's /etc for a symlink to a directory of the
// host (whose passwd names the user "host"): Lookup must never read the
// host's file. Resolving the path first and opening it after (SecureJoin,
// then open) read it within a few hundred lookups here.
func TestLookupRacingSymlink(t *testing.T) {
	rootfs, host := t.TempDir(), t.TempDir()
	etc := filepath.Join(rootfs, "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "passwd"), []byte("app:x:1000:1000::/home/app:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "passwd"), []byte("app:x:4242:4242::/host:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(rootfs, "etc.link")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // swap etc and etc.link, then back, with renameat2(RENAME_EXCHANGE)
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, etc, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 5000; i++ {
		u, err := Lookup(rootfs, "app")
		if err != nil {
			continue // the swapped /etc is a symlink to outside: no file
		}
		if u.Uid == 4242 || u.Home == "/host" {
			t.Fatalf("lookup %d read the host's passwd: uid %d, home %q", i, u.Uid, u.Home)
		}
	}
}
