package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExecLeanFailureClosesStateOnce: an execLean that fails must close
// its state memfd once; a second close (a finalizer of a File wrapping a
// descriptor already closed) would close whatever file took its number
// since, such as an app's log or output pipe.
func TestExecLeanFailureClosesStateOnce(t *testing.T) {
	bad := 1 << 20 // no such descriptor: execLean fails before the exec
	if err := execLean(&resumeState{PodDir: "/nonexistent"}, []int{bad}, -1); err == nil {
		t.Fatal("execLean with a bad descriptor succeeded")
	}
	// The memfd's number is free again: the next files take it.
	var files []*os.File
	for range 8 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	for _, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Errorf("descriptor %d of %s was closed under it: %v", f.Fd(), f.Name(), err)
		}
	}
}
