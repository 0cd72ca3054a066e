package main

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Signals, and what is in flight: a refresh (refresh.go) waits until
// nothing is.

// handleSignals stops the pod on a stop signal read from sv.stopR
// (package stopsig). A refresh pauses it (pauseSignals) so that no signal is
// read and then lost in the exec: it stays in the pipe for `stage1 lean`.
func (sv *supervisor) handleSignals() {
	go func() {
		var b [1]byte
		for {
			n, err := sv.stopR.Read(b[:])
			if n > 0 {
				sv.stopOnSignal(syscall.Signal(b[0]))
				return
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				slog.Warn("cannot read the stop signals", "error", err)
				return
			}
			sv.mu.Lock()
			paused, attempt := sv.sigPaused, sv.attempt
			sv.sigPaused = nil
			sv.mu.Unlock()
			if paused != nil {
				close(paused)
			}
			if attempt != nil {
				<-attempt
			}
		}
	}()
}

// stopOnSignal stops the pod in the background; no refresh from now on.
func (sv *supervisor) stopOnSignal(sig syscall.Signal) {
	sv.mu.Lock()
	sv.stopping = true
	sv.mu.Unlock()
	go func() {
		slog.Info("stopping the pod", "signal", sig)
		sv.shutdown(sigtermGrace)
	}()
}

// pauseSignals takes handleSignals out of its read until the refresh
// attempt ends (refresh clears the deadline); false if it does not come
// out: it is stopping the pod.
func (sv *supervisor) pauseSignals() bool {
	paused := make(chan struct{})
	sv.mu.Lock()
	sv.sigPaused = paused
	sv.mu.Unlock()
	sv.stopR.SetReadDeadline(time.Unix(1, 0))
	select {
	case <-paused:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// enter marks a connection, an app exit or a prestarted container as
// being handled: no refresh until leave.
func (sv *supervisor) enter() {
	sv.mu.Lock()
	sv.busy++
	sv.dirty = true
	if sv.idle != nil {
		sv.idle.Stop()
	}
	sv.mu.Unlock()
}

// enterOrWait is enter for an app's exit, which a refresh under way would
// lose: it waits until that refresh gives up (or the execve ends this
// goroutine; the resumed supervisor reaps the app).
func (sv *supervisor) enterOrWait() {
	for {
		sv.mu.Lock()
		if !sv.execing {
			sv.mu.Unlock()
			sv.enter()
			return
		}
		attempt := sv.attempt
		sv.mu.Unlock()
		<-attempt
	}
}

// leave ends what enter began; the last one arms the refresh.
func (sv *supervisor) leave() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.busy--
	if sv.busy > 0 || !sv.dirty || sv.stopping || sv.refreshDelay <= 0 || sv.serveDone == nil || sv.spawner.spareChildren() {
		return
	}
	if sv.idle == nil {
		sv.idle = time.AfterFunc(sv.refreshDelay, sv.refresh)
	} else {
		sv.idle.Reset(sv.refreshDelay)
	}
}
