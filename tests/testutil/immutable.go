package testutil

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL (linux/fs.h).
const fsImmutableFL = 0x10

// SetImmutable sets (on) or clears the immutable flag of dir: nothing can
// be created, renamed or deleted in it, even by root, so a test can make a
// step of the code under test fail at a chosen point. It skips the test
// where the flag cannot be set (no CAP_LINUX_IMMUTABLE, a filesystem
// without it).
func SetImmutable(t testing.TB, dir string, on bool) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		if on {
			flags |= fsImmutableFL
		} else {
			flags &^= fsImmutableFL
		}
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
	}
	if err != nil {
		t.Skipf("cannot change the immutable flag of %s: %v", dir, err)
	}
}
