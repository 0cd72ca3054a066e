package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

// codedError carries a control protocol error code.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func errNotFound(name string) error {
	return &codedError{control.CodeNotFound, fmt.Errorf("pod has no app %q", name)}
}

func errNotRunning(name string) error {
	return &codedError{control.CodeNotRunning, fmt.Errorf("app %q is not running", name)}
}

func errRunning(name string) error {
	return &codedError{control.CodeRunning, fmt.Errorf("app %q is running", name)}
}

func errInvalid(format string, args ...any) error {
	return &codedError{control.CodeInvalid, fmt.Errorf(format, args...)}
}

// listen creates <pod>/stage1.sock, readable by root only. It is bound in
// a private directory and moved into place once its mode is set: bound in
// place, a umask such as 002 would leave it open to the pod directory's
// group until the chmod.
func (sv *supervisor) listen() error {
	p := schema.PodDir(sv.podDir).Stage1Socket()
	os.Remove(p)
	priv, err := os.MkdirTemp(filepath.Dir(p), ".stage1.sock-") // 0700
	if err != nil {
		return fmt.Errorf("cannot make a directory to bind %q in: %w", p, err)
	}
	defer os.RemoveAll(priv)
	bound := filepath.Join(priv, filepath.Base(p))
	addr, release, err := control.ShortSocketPath(bound)
	if err != nil {
		return err
	}
	defer release()
	l, err := net.Listen("unix", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %q: %w", p, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // its name moves
	if err := os.Chmod(bound, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("cannot chmod %q: %w", bound, err)
	}
	if err := os.Rename(bound, p); err != nil {
		l.Close()
		return fmt.Errorf("cannot move socket %q into place: %w", p, err)
	}
	sv.listener = ul
	return nil
}

func (sv *supervisor) startServing() {
	done := make(chan struct{})
	sv.mu.Lock()
	sv.serveDone = done
	sv.mu.Unlock()
	go sv.serve(done)
}

// serve accepts connections until the listener is closed, or a refresh
// sets its deadline.
func (sv *supervisor) serve(done chan struct{}) {
	defer close(done)
	for {
		conn, err := sv.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				sv.mu.Lock()
				execing := sv.execing
				sv.mu.Unlock()
				if execing {
					return
				}
				sv.listener.SetDeadline(time.Time{})
				continue
			}
			slog.Warn("cannot accept a control connection", "error", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		sv.enter()
		go func() {
			defer sv.leave()
			sv.handle(conn)
		}()
	}
}

func (sv *supervisor) handle(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var req control.Request
	if err := control.ReadMessage(br, &req); err != nil {
		slog.Debug("cannot read a request", "error", err)
		writeResponse(conn, &control.Response{}, errInvalid("cannot read request: %v", err))
		return
	}
	conn.SetReadDeadline(time.Time{})
	slog.Debug("request", "op", req.Op, "app", req.App)
	switch req.Op {
	case control.OpExec:
		sv.handleExec(conn, br, &req)
		return
	case control.OpAttach:
		sv.handleAttach(conn, br, &req)
		return
	case control.OpShutdown:
		sv.shutdownRequest(conn, &req)
		return
	}
	resp := &control.Response{}
	writeResponse(conn, resp, sv.dispatch(&req, resp))
}

func (sv *supervisor) dispatch(req *control.Request, resp *control.Response) error {
	switch req.Op {
	case control.OpStart:
		return sv.startApp(req.App, req.Deadline)
	case control.OpPrestart:
		if req.Manifest == nil || req.Manifest.Name != req.App {
			return errInvalid("prestart of %q without its manifest", req.App)
		}
		return sv.prestartApp(req.Manifest)
	case control.OpStop:
		a, err := sv.lookup(req.App)
		if err != nil {
			return err
		}
		a.stop(req.Timeout)
		return nil
	case control.OpRemove:
		return sv.removeApp(req.App)
	case control.OpStatus:
		resp.Status = sv.statuses()
		return nil
	case control.OpReopen:
		return sv.reopenLog(req.App)
	case control.OpCheckpoint:
		return sv.checkpoint(req.Checkpoint)
	case control.OpUpdate:
		if req.Resources == nil {
			return errInvalid("update of %q without resources", req.App)
		}
		a, err := sv.lookup(req.App)
		if err != nil {
			return err
		}
		return a.updateResources(req.Resources)
	}
	return errInvalid("unknown operation %q", req.Op)
}

func writeResponse(conn net.Conn, resp *control.Response, err error) error {
	if err != nil {
		resp.Error = err.Error()
		var ce *codedError
		if errors.As(err, &ce) {
			resp.Code = ce.code
		}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			resp.Errno = errno
		}
	}
	b, merr := json.Marshal(resp)
	if merr != nil {
		b, _ = json.Marshal(&control.Response{Error: "cannot encode response: " + merr.Error()})
	}
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, werr := conn.Write(append(b, '\n'))
	conn.SetWriteDeadline(time.Time{})
	return werr
}

// shutdownRequest stops everything, answers, and lets the supervisor exit.
func (sv *supervisor) shutdownRequest(conn net.Conn, req *control.Request) {
	sv.stopAll(req.Timeout)
	sv.cleanup()
	writeResponse(conn, &control.Response{}, nil)
	sv.finish()
}
