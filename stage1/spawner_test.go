package main

import (
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpawnerSpareThread: a start that waits too long for a busy main
// thread runs on a spare thread, which outlives it, and the spawner then
// says so (no more re-executions); a start that does not wait stays on the
// main thread.
func TestSpawnerSpareThread(t *testing.T) {
	s := newSpawner()
	s.patience = 100 * time.Millisecond
	mainTid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		mainTid <- unix.Gettid()
		s.loop()
	}()
	defer s.stop()
	main := <-mainTid
	tid := func() int {
		var got int
		if err := s.do(func() error { got = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := tid(); got != main || s.spareChildren() {
		t.Fatalf("an idle spawner ran a start on thread %d (main %d), spare children %v", got, main, s.spareChildren())
	}
	hung, release := make(chan struct{}), make(chan struct{})
	go s.doMain(func() error { close(hung); <-release; return nil })
	<-hung
	defer close(release)
	t0 := time.Now()
	cmd := exec.Command("sleep", "100")
	var spare int
	if err := s.do(func() error { spare = unix.Gettid(); return cmd.Start() }); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if waited := time.Since(t0); spare == main || waited < s.patience || waited > 10*s.patience {
		t.Fatalf("a start behind a hung one ran on thread %d (main %d) after %v", spare, main, waited)
	}
	if !s.spareChildren() {
		t.Fatal("the spawner does not report the spare thread's child")
	}
	// the child outlives the call: its parent thread does not end
	time.Sleep(50 * time.Millisecond)
	if err := unix.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the child started on the spare thread is gone: %v", err)
	}
	var ps unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &ps, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil || ps.Signo != 0 {
		t.Fatalf("the child started on the spare thread exited: %v %+v", err, ps)
	}
	// the spare thread serves the next late start too
	if got := tid(); got != spare {
		t.Fatalf("a second late start ran on thread %d, want the spare %d", got, spare)
	}
	// once its child is reaped, the supervisor may re-execute again
	cmd.Process.Kill()
	cmd.Wait()
	if s.spareChildren() {
		t.Fatal("the spawner reports a spare thread's child after it was reaped")
	}
}
