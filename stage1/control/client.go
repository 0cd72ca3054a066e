package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rkt/rkt/pkg/schema"
)

// Client talks to one pod's supervisor. It holds no connection: every call
// dials the socket, so a Client is cheap and safe for concurrent use.
type Client struct {
	podDir string
	sock   string
}

// Dial returns a client for the supervisor of the pod at podDir, after
// checking that something listens on its socket (ErrNoSupervisor otherwise).
func Dial(podDir string) (*Client, error) {
	c := NewClient(podDir)
	conn, err := c.dial(context.Background())
	if err != nil {
		return nil, err
	}
	conn.Close()
	return c, nil
}

// NewClient returns a client for the supervisor of the pod at podDir
// without checking it: a call fails with ErrNoSupervisor when nothing
// listens. It spares the supervisor the connection of Dial's check.
func NewClient(podDir string) *Client {
	return &Client{podDir: podDir, sock: schema.PodDir(podDir).Stage1Socket()}
}

// PodDir returns the pod directory the client was made for.
func (c *Client) PodDir() string { return c.podDir }

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	addr, release, err := ShortSocketPath(c.sock)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("cannot connect to %q: %w (%v)", c.sock, ErrNoSupervisor, err)
		}
		return nil, err
	}
	defer release()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("cannot connect to %q: %w (%v)", c.sock, ErrNoSupervisor, err)
		}
		return nil, fmt.Errorf("cannot connect to %q: %w", c.sock, err)
	}
	return conn, nil
}

// roundTrip sends req on a new connection and reads the Response. On success
// with keep=true it returns the still-open connection and its reader.
func (c *Client) roundTrip(ctx context.Context, req *Request, keep bool) (*Response, net.Conn, *bufio.Reader, error) {
	p, err := c.send(ctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	return p.receive(keep)
}

// Pending is a request sent whose answer is still to be read.
type Pending struct {
	c    *Client
	ctx  context.Context
	req  *Request
	conn net.Conn
	stop func() bool
}

// send dials and sends req.
func (c *Client) send(ctx context.Context, req *Request) (*Pending, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	p := &Pending{c: c, ctx: ctx, req: req, conn: conn,
		stop: context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, p.fail(fmt.Errorf("cannot encode %s request: %w", req.Op, err))
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return nil, p.fail(fmt.Errorf("cannot send %s request to %q: %w", req.Op, c.sock, err))
	}
	return p, nil
}

func (p *Pending) fail(err error) error {
	p.stop()
	p.conn.Close()
	if p.ctx.Err() != nil {
		return fmt.Errorf("%s %q: %w", p.req.Op, p.req.App, p.ctx.Err())
	}
	return err
}

// receive reads the Response; with keep=true it returns the still-open
// connection and its reader.
func (p *Pending) receive(keep bool) (*Response, net.Conn, *bufio.Reader, error) {
	br := bufio.NewReader(p.conn)
	var resp Response
	if err := ReadMessage(br, &resp); err != nil {
		return nil, nil, nil, p.fail(fmt.Errorf("bad answer to %s from %q: %w", p.req.Op, p.c.sock, err))
	}
	if resp.Error != "" {
		return nil, nil, nil, p.fail(responseError(p.req, &resp))
	}
	p.stop()
	if !keep {
		p.conn.Close()
		return &resp, nil, nil, nil
	}
	return &resp, p.conn, br, nil
}

// Wait reads the answer to the request and closes its connection.
func (p *Pending) Wait() error {
	_, _, _, err := p.receive(false)
	return err
}

func responseError(req *Request, resp *Response) error {
	var base error
	switch resp.Code {
	case CodeNotFound:
		base = ErrAppNotFound
	case CodeRunning:
		base = ErrAppRunning
	case CodeNotRunning:
		base = ErrAppNotRunning
	case CodeInvalid:
		base = ErrInvalid
	}
	switch {
	case base != nil && resp.Errno != 0:
		return fmt.Errorf("stage1 %s %q: %s: %w (%w)", req.Op, req.App, resp.Error, base, resp.Errno)
	case base != nil:
		return fmt.Errorf("stage1 %s %q: %s: %w", req.Op, req.App, resp.Error, base)
	case resp.Errno != 0:
		return fmt.Errorf("stage1 %s %q: %s (%w)", req.Op, req.App, resp.Error, resp.Errno)
	}
	return fmt.Errorf("stage1 %s %q: %s", req.Op, req.App, resp.Error)
}

func (c *Client) call(ctx context.Context, req *Request) (*Response, error) {
	resp, _, _, err := c.roundTrip(ctx, req, false)
	return resp, err
}

// StartApp starts the app: reads its entry in the pod manifest and its config.json, creates its
// container and runs it. It returns once the app's process runs. The
// context's deadline bounds the restore of a checkpointed app.
func (c *Client) StartApp(ctx context.Context, name string) error {
	req := &Request{Op: OpStart, App: name}
	if d, ok := ctx.Deadline(); ok {
		req.Deadline = d
	}
	_, err := c.call(ctx, req)
	return err
}

// PrestartApp asks the supervisor to create the app's container now, in
// the background: a later StartApp then only runs its process. The app's
// files must be written, but it need not be in the pod manifest yet (its
// manifest is sent). It returns at once; a failure shows at StartApp, which
// creates the container anew.
func (c *Client) PrestartApp(ctx context.Context, app *schema.App) error {
	_, err := c.call(ctx, &Request{Op: OpPrestart, App: app.Name, Manifest: app})
	return err
}

// SendPrestartApp is PrestartApp without waiting for the answer: Wait reads
// it, which the caller does before any other call about the app (the
// supervisor takes the prestart in hand before it answers).
func (c *Client) SendPrestartApp(ctx context.Context, app *schema.App) (*Pending, error) {
	return c.send(ctx, &Request{Op: OpPrestart, App: app.Name, Manifest: app})
}

// StopApp sends SIGTERM to the app, SIGKILL after timeout, and returns once it
// has exited and its status is recorded. Stopping a stopped app succeeds.
func (c *Client) StopApp(ctx context.Context, name string, timeout time.Duration) error {
	_, err := c.call(ctx, &Request{Op: OpStop, App: name, Timeout: timeout})
	return err
}

// RemoveApp makes the supervisor forget a stopped app and destroy its
// container (ErrAppRunning if it runs).
func (c *Client) RemoveApp(ctx context.Context, name string) error {
	_, err := c.call(ctx, &Request{Op: OpRemove, App: name})
	return err
}

// Status returns the status of every app the supervisor knows.
func (c *Client) Status(ctx context.Context) ([]schema.AppStatus, error) {
	resp, err := c.call(ctx, &Request{Op: OpStatus})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

// ReopenLog closes and reopens the app's log file (after log rotation).
func (c *Client) ReopenLog(ctx context.Context, name string) error {
	_, err := c.call(ctx, &Request{Op: OpReopen, App: name})
	return err
}

// UpdateResources changes a running app's cgroup limits.
func (c *Client) UpdateResources(ctx context.Context, name string, res *specs.LinuxResources) error {
	if res == nil {
		return fmt.Errorf("update resources of %q: nil resources: %w", name, ErrInvalid)
	}
	_, err := c.call(ctx, &Request{Op: OpUpdate, App: name, Resources: res})
	return err
}

// Shutdown stops every app (SIGTERM, SIGKILL after timeout), cleans up and
// makes the supervisor exit. It returns once the apps are gone; the process
// exits right after.
func (c *Client) Shutdown(ctx context.Context, timeout time.Duration) error {
	_, err := c.call(ctx, &Request{Op: OpShutdown, Timeout: timeout})
	return err
}

// WaitReady reads the readiness pipe of a supervisor that is starting (the
// read end of its fd 4) until the supervisor closes it: nil after "ok",
// otherwise the error it reported.
func WaitReady(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return fmt.Errorf("cannot read stage1 readiness: %w", err)
	}
	msg := strings.TrimSpace(string(b))
	switch {
	case msg == "ok":
		return nil
	case msg == "":
		return errors.New("stage1 exited before it was ready (see stage1.log)")
	default:
		return fmt.Errorf("stage1 failed to start: %s", msg)
	}
}

// checkpointGrace is how long a checkpoint call waits for the answer past
// its deadline: the supervisor finishes the dump under way and resumes the
// apps before it answers, and the caller must not return while they are
// paused.
const checkpointGrace = 2 * time.Minute

// Checkpoint pauses the spec's apps, dumps each with CRIU (leaving it
// running), archives its writable layer and resumes them all. It waits for
// the answer even after ctx ends (until the spec's deadline plus a grace
// period): the answer comes once the apps run again.
func (c *Client) Checkpoint(ctx context.Context, spec CheckpointSpec) error {
	if spec.Deadline.IsZero() {
		if d, ok := ctx.Deadline(); ok {
			spec.Deadline = d
		}
	}
	wctx := context.WithoutCancel(ctx)
	if !spec.Deadline.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(wctx, spec.Deadline.Add(checkpointGrace))
		defer cancel()
	}
	_, err := c.call(wctx, &Request{Op: OpCheckpoint, Checkpoint: &spec})
	return err
}
