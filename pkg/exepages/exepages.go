// Package exepages gives back the pages of the running executable's code
// and read-only data that the process mapped: what only start-up (package
// initialisation) or an occasional task (an image pull) ran. Nearly every
// block of a Go binary has some code that runs at start, and the kernel
// maps file pages in 64 KiB blocks around each fault, so without this a
// long-running Go daemon keeps most of its binary resident for good. The
// pages stay in the page cache (clean, unmapped: the first reclaimed under
// pressure); those the process uses again come back at their next use, a
// minor fault each. This is what a kernel does with its __init sections.
package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// span is a range of the address space, [start, end).
type span struct{ start, end uint64 }

// Drop unmaps the resident pages of the executable's read-only mappings
// (code, rodata) and returns how many bytes of address space it advised.
// A mapping holding private (copied-on-write) pages, resident or swapped
// out, is left alone: its content is no longer the file's (a relocated
// RELRO segment of a position-independent build, a debugger's breakpoint).
func Drop() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return 0, fmt.Errorf("cannot stat the executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("cannot read the process's mappings: %w", err)
	}
	spans, err := readOnlySpans(f, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f.Close()
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, s := range spans {
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(s.start), uintptr(s.end-s.start), unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("cannot drop the executable's pages at %#x: %w", s.start, e)
		}
		n += s.end - s.start
	}
	return n, nil
}

// readOnlySpans returns, from smaps, the private mappings of the file
// (major:minor, ino) that are neither writable nor hold private pages.
func readOnlySpans(smaps io.Reader, major, minor uint32, ino uint64) ([]span, error) {
	var spans []span
	current := false // the last of spans is the mapping being read
	s := bufio.NewScanner(smaps)
	for s.Scan() {
		line := s.Bytes()
		if name, value, ok := field(line); ok {
			// private pages, resident or swapped out
			if current && (name == "Anonymous" || name == "Swap") && value != "0 kB" {
				spans, current = spans[:len(spans)-1], false
			}
			continue
		}
		m, ok := parseMapping(string(line))
		current = ok && m.perms[1] == '-' && m.perms[3] == 'p' && m.major == major && m.minor == minor && m.ino == ino
		if current {
			spans = append(spans, m.span)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the process's mappings: %w", err)
	}
	return spans, nil
}

// field splits a "Name:   value" line of smaps; a mapping's header line
// is not one (its first word holds a dash).
func field(line []byte) (name, value string, ok bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 || bytes.ContainsAny(line[:i], "- ") {
		return "", "", false
	}
	return string(line[:i]), strings.TrimSpace(string(line[i+1:])), true
}

type mapping struct {
	span
	perms        string
	major, minor uint32
	ino          uint64
}

// parseMapping parses "start-end perms offset major:minor inode [path]".
func parseMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || len(f[1]) != 4 {
		return mapping{}, false
	}
	var m mapping
	lo, hi, ok := strings.Cut(f[0], "-")
	dmaj, dmin, ok2 := strings.Cut(f[3], ":")
	if !ok || !ok2 {
		return mapping{}, false
	}
	var errs [5]error
	m.start, errs[0] = strconv.ParseUint(lo, 16, 64)
	m.end, errs[1] = strconv.ParseUint(hi, 16, 64)
	maj, e2 := strconv.ParseUint(dmaj, 16, 32)
	min, e3 := strconv.ParseUint(dmin, 16, 32)
	errs[2], errs[3] = e2, e3
	m.ino, errs[4] = strconv.ParseUint(f[4], 10, 64)
	for _, err := range errs {
		if err != nil {
			return mapping{}, false
		}
	}
	if m.end <= m.start {
		return mapping{}, false
	}
	m.perms, m.major, m.minor = f[1], uint32(maj), uint32(min)
	return m, true
}
