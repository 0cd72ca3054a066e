package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/checkpoint-restore/go-criu/v8/magic"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rkt/rkt/pkg/schema"
)

// maxPendingRestorePID returns the highest PID that the restores still
// pending in the pod (apps whose AppDir.Restore holds CRIU images) will
// recreate; 0 when none is pending.
func maxPendingRestorePID(podDir string) (uint32, error) {
	pd := schema.PodDir(podDir)
	ents, err := os.ReadDir(pd.AppsDir())
	if err != nil {
		return 0, fmt.Errorf("cannot read the apps of pod %s: %w", podDir, err)
	}
	var highest uint32
	for _, e := range ents {
		p := filepath.Join(pd.App(e.Name()).Restore(), "pstree.img")
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("cannot read %s: %w", p, err)
		}
		n, err := pstreeMaxPID(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		highest = max(highest, n)
	}
	return highest, nil
}

// maxPstreeEntries bounds what a pstree image may list.
const maxPstreeEntries = 1 << 16

// pstreeMaxPID returns the highest PID (process, thread, process group or
// session) of a CRIU pstree image: a restore recreates every one of them.
// The image is a magic, then entries, each a little-endian uint32 size and
// a PstreeEntry (criu's pstree.proto: pid 1, ppid 2, pgid 3, sid 4, threads
// 5, all varints). It is read with protowire, not the generated type: that
// would link the whole protobuf runtime into stage1 (+2.3 MB, 13 more
// package inits at every pod's start).
func pstreeMaxPID(b []byte) (uint32, error) {
	m := magic.LoadMagic()
	word := func() (uint64, bool) {
		if len(b) < 4 {
			return 0, false
		}
		v := uint64(binary.LittleEndian.Uint32(b))
		b = b[4:]
		return v, true
	}
	v, ok := word()
	if ok && v == m.ByName["IMG_COMMON"] {
		v, ok = word()
	}
	if !ok || v != m.ByName["PSTREE"] {
		return 0, errors.New("not a CRIU pstree image")
	}
	var highest uint32
	for n := 0; len(b) > 0; n++ {
		size, ok := word()
		if !ok || size > uint64(len(b)) || n == maxPstreeEntries {
			return 0, errors.New("truncated or oversized CRIU pstree image")
		}
		pid, err := entryMaxPID(b[:size])
		if err != nil {
			return 0, fmt.Errorf("bad CRIU pstree entry: %w", err)
		}
		highest = max(highest, pid)
		b = b[size:]
	}
	return highest, nil
}

// entryMaxPID returns the highest of the PIDs of a PstreeEntry (ppid
// aside: the parent is restored as a process of its own entry, or is
// outside).
func entryMaxPID(e []byte) (uint32, error) {
	var highest uint32
	for len(e) > 0 {
		num, typ, n := protowire.ConsumeTag(e)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		e = e[n:]
		switch {
		case (num == 1 || num == 3 || num == 4 || num == 5) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(e)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			highest = max(highest, uint32(v))
			e = e[n:]
		case num == 5 && typ == protowire.BytesType: // packed threads
			p, n := protowire.ConsumeBytes(e)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			for len(p) > 0 {
				v, n := protowire.ConsumeVarint(p)
				if n < 0 {
					return 0, protowire.ParseError(n)
				}
				highest = max(highest, uint32(v))
				p = p[n:]
			}
			e = e[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, e)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			e = e[n:]
		}
	}
	return highest, nil
}
