package stage0

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
	"github.com/rkt/rkt/stage1/control"
)

func TestAppErrMapping(t *testing.T) {
	for in, want := range map[error]error{
		control.ErrAppNotFound:   ErrAppNotFound,
		control.ErrInvalid:       ErrInvalid,
		control.ErrNoSupervisor:  ErrNotRunning,
		control.ErrAppNotRunning: ErrNotRunning,
		control.ErrAppRunning:    ErrInvalidState,
	} {
		got := appErr(fmt.Errorf("stage1 said: %w", in))
		if !errors.Is(got, want) || !errors.Is(got, in) {
			t.Errorf("appErr(%v) = %v; want it to match %v and keep the cause", in, got, want)
		}
	}
	if appErr(nil) != nil {
		t.Error("appErr(nil) != nil")
	}
}

// TestPrestartDroppedAfterCancel: an AddApp whose context ends after it
// sent a prestart, and whose commit fails, still has the supervisor drop
// the prestarted container (which it used to keep until the pod went).
func TestPrestartDroppedAfterCancel(t *testing.T) {
	rt := newTestRuntime(t)
	p, l := fakeSupervisorPod(t, rt)
	// A supervisor that answers a prestart after 300ms, the rest at once.
	ops := make(chan string, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var req control.Request
				if err := control.ReadMessage(bufio.NewReader(c), &req); err != nil {
					return
				}
				ops <- req.Op + " " + req.App
				if req.Op == control.OpPrestart {
					time.Sleep(300 * time.Millisecond)
				}
				c.Write([]byte("{}\n"))
			}()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	pre := rt.sendPrestart(ctx, p, &schema.App{Name: "web"})
	if pre == nil {
		t.Fatal("the prestart was not sent")
	}
	if op := <-ops; op != "prestart web" {
		t.Fatalf("first request %q", op)
	}
	cancel() // the caller gives up while the supervisor answers
	rt.settlePrestart(ctx, p, "web", pre, false)
	select {
	case op := <-ops:
		if op != "remove web" {
			t.Errorf("then %q, want remove web", op)
		}
	case <-time.After(2 * time.Second):
		t.Error("the prestarted container of an app not added was not dropped")
	}
}

// TestSupervisorCallsByUUID: a call on a named app of a pod given by its
// full UUID is answered by the pod's supervisor (which knows its apps),
// and when none answers the error still says whether the pod is missing
// or not running.
func TestSupervisorCallsByUUID(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	missing, err := NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.ReopenAppLog(ctx, missing, "web"); !errors.Is(err, ErrPodNotFound) {
		t.Errorf("a pod that does not exist: %v, want ErrPodNotFound", err)
	}
	p, l := fakeSupervisorPod(t, rt)
	reqs := make(chan control.Request, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			var req control.Request
			if control.ReadMessage(bufio.NewReader(c), &req) == nil {
				reqs <- req
				if req.App == "web" {
					c.Write([]byte("{}\n"))
				} else {
					c.Write([]byte(`{"error":"no such app","code":"not-found"}` + "\n"))
				}
			}
			c.Close()
		}
	}()
	if err := rt.ReopenAppLog(ctx, p.uuid, "web"); err != nil {
		t.Errorf("reopen through the supervisor: %v", err)
	} else if req := <-reqs; req.Op != control.OpReopen || req.App != "web" {
		t.Errorf("the supervisor got %s %q, want %s web", req.Op, req.App, control.OpReopen)
	}
	if err := rt.ReopenAppLog(ctx, p.uuid, "db"); !errors.Is(err, ErrAppNotFound) {
		t.Errorf("an app the supervisor does not know: %v, want ErrAppNotFound", err)
	}
	l.Close()
	if err := rt.ReopenAppLog(ctx, p.uuid, "web"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a pod whose supervisor is gone: %v, want ErrNotRunning", err)
	}
}
