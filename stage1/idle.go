package main

import (
	"log/slog"
	"os/signal"
	"time"

	"golang.org/x/sys/unix"
)

// Signals, and what is in flight: a refresh (refresh.go) waits until
// nothing is.

// handleSignals stops the pod on SIGTERM, SIGINT or SIGHUP. A refresh
// pauses it (sigPause) so that no signal is taken and then lost.
func (sv *supervisor) handleSignals() {
	signal.Notify(sv.sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	go func() {
		for {
			select {
			case s := <-sv.sigs:
				slog.Info("stopping the pod", "signal", s)
				sv.shutdown(sigtermGrace)
				return
			case paused := <-sv.sigPause:
				sv.mu.Lock()
				attempt := sv.attempt
				sv.mu.Unlock()
				close(paused)
				<-attempt
			}
		}
	}()
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
	if sv.busy > 0 || !sv.dirty || sv.stopping || sv.refreshDelay <= 0 || sv.serveDone == nil {
		return
	}
	if sv.idle == nil {
		sv.idle = time.AfterFunc(sv.refreshDelay, sv.refresh)
	} else {
		sv.idle.Reset(sv.refreshDelay)
	}
}
