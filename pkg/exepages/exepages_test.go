package exepages

import (
	"bufio"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const smapsSample = `00400000-00ade000 r-xp 00000000 fe:00 1001 /usr/bin/rkt
Rss:                4284 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00ade000-01293000 r--p 006de000 fe:00 1001 /usr/bin/rkt
Rss:                5832 kB
Anonymous:             0 kB
01293000-0130c000 rw-p 00e93000 fe:00 1001 /usr/bin/rkt
Anonymous:           356 kB
01400000-01500000 r--p 00f00000 fe:00 1001 /usr/bin/rkt
Anonymous:             4 kB
01480000-01490000 r--p 00f80000 fe:00 1001 /usr/bin/rkt
Anonymous:             0 kB
Swap:                  8 kB
01500000-01600000 r--s 00000000 fe:00 1001 /usr/bin/rkt
Anonymous:             0 kB
01600000-01700000 r--p 00000000 fe:01 1001 /other/dev
Anonymous:             0 kB
01700000-01800000 r--p 00000000 fe:00 1002 /usr/bin/other (deleted)
Anonymous:             0 kB
c000000000-c000400000 rw-p 00000000 00:00 0
Anonymous:          4096 kB
7ffd1000-7ffd3000 r-xp 00000000 00:00 0                          [vdso]
`

// TestReadOnlySpans: only the private, read-only mappings of the file
// whose pages are all the file's are taken.
func TestReadOnlySpans(t *testing.T) {
	got, err := readOnlySpans(strings.NewReader(smapsSample), 0xfe, 0, 1001)
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{0x400000, 0xade000}, {0xade000, 0x1293000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spans = %x, want %x", got, want)
	}
	// the executable replaced on disk (a package upgrade): the mapping
	// still names the old inode, which is the one matched
	got, _ = readOnlySpans(strings.NewReader(smapsSample), 0xfe, 0, 1002)
	if len(got) != 1 || got[0] != (span{0x1700000, 0x1800000}) {
		t.Errorf("deleted executable: spans = %x", got)
	}
}

// exeRSS is the resident KiB of this process's mappings of its executable.
func exeRSS(t *testing.T) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kib, ours := 0, false
	s := bufio.NewScanner(f)
	for s.Scan() {
		if name, value, ok := field(s.Bytes()); ok {
			if ours && name == "Rss" {
				n, _ := strconv.Atoi(strings.TrimSuffix(value, " kB"))
				kib += n
			}
			continue
		}
		m, ok := parseMapping(s.Text())
		ours = ok && m.ino == st.Ino && m.perms[1] == '-'
	}
	return kib
}

// TestDrop: the test binary's own code and read-only data leave its
// resident set, and the process runs on (what it calls next faults back).
func TestDrop(t *testing.T) {
	before := exeRSS(t)
	n, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	t.Logf("advised %d KiB; executable resident %d -> %d KiB", n>>10, before, after)
	// what runs between Drop and the count (smaps' reading) faults back a
	// few 64 KiB blocks of a test binary of ~3 MB
	if n == 0 || after > before-256 {
		t.Errorf("advised %d bytes; executable resident %d -> %d KiB", n, before, after)
	}
	if again := exeRSS(t); again <= 0 {
		t.Errorf("resident after running on: %d KiB", again)
	}
}
