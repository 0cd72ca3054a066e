package main

import (
	"errors"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The watch kills what the thread started after it was armed, once the
// deadline and the grace have passed, and nothing it started before.
func TestChildWatchKillsLateChildren(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	older := exec.Command("sleep", "30")
	if err := older.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { older.Process.Kill(); older.Wait() }()

	w := watchChildren(time.Now(), 100*time.Millisecond)
	late := exec.Command("sleep", "30")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	err := late.Wait()
	killed := w.stop()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the late child ended with %v, want SIGKILL", err)
	}
	if !slices.Equal(killed, []int{late.Process.Pid}) {
		t.Errorf("killed %v, want [%d]", killed, late.Process.Pid)
	}
	if err := older.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the child started before the watch is gone: %v", err)
	}
}

// A child that ends before the deadline and the grace is left alone, and so
// is everything without a deadline.
func TestChildWatchSparesTimelyChildren(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, deadline := range []time.Time{time.Now().Add(time.Minute), {}} {
		w := watchChildren(deadline, 0)
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
		if killed := w.stop(); len(killed) != 0 {
			t.Errorf("deadline %v: killed %v", deadline, killed)
		}
	}
}

// A tightened watch kills at the new, earlier deadline.
func TestChildWatchTighten(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := watchChildren(time.Now().Add(time.Hour), 100*time.Millisecond)
	late := exec.Command("sleep", "30")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	w.tighten(time.Now().Add(time.Minute))
	w.tighten(time.Now())
	w.tighten(time.Now().Add(time.Minute)) // later: no change
	err := late.Wait()
	killed := w.stop()
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("the tightened watch killed after %v", took)
	}
	if !slices.Equal(killed, []int{late.Process.Pid}) || err == nil {
		t.Errorf("killed %v (wait: %v), want [%d]", killed, err, late.Process.Pid)
	}
}
