package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	big := bytes.Repeat([]byte("x"), maxFrame+10)
	if err := fw.WriteFrame(FrameStdout, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteFrame(FrameStdinClose, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.StreamWriter(FrameStderr).Write(big); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ byte
		n   int
	}{{FrameStdout, 2}, {FrameStdinClose, 0}, {FrameStderr, maxFrame}, {FrameStderr, 10}}
	for i, w := range want {
		typ, p, err := ReadFrame(&buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if typ != w.typ || len(p) != w.n {
			t.Errorf("frame %d: type %d len %d, want %d %d", i, typ, len(p), w.typ, w.n)
		}
	}
	if _, _, err := ReadFrame(&buf); err != io.EOF {
		t.Errorf("at end: %v, want io.EOF", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0, 0})); err == nil || err == io.EOF {
		t.Errorf("truncated header: %v", err)
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{1, 0xff, 0, 0, 0})); err == nil {
		t.Error("oversized frame accepted")
	}
}

func TestStatusFiles(t *testing.T) {
	pod := t.TempDir()
	for _, n := range []string{"b", "a", "never-started"} {
		if err := os.MkdirAll(string(schema.PodDir(pod).App(n)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, st := range []schema.AppStatus{
		{Name: "b", State: schema.AppRunning, Pid: 42, StartedAt: now},
		{Name: "a", State: schema.AppExited, ExitCode: 137, Signal: "SIGKILL", OOMKilled: true, Reason: "OOMKilled"},
	} {
		if err := WriteAppStatus(pod, &st); err != nil {
			t.Fatal(err)
		}
	}
	sts, err := ReadPodStatus(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].Name != "a" || sts[1].Name != "b" {
		t.Fatalf("statuses: %+v", sts)
	}
	if !sts[0].OOMKilled || sts[0].ExitCode != 137 || !sts[1].StartedAt.Equal(now) || sts[1].Pid != 42 {
		t.Errorf("round trip: %+v", sts)
	}
	if _, err := ReadAppStatus(pod, "never-started"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing status: %v", err)
	}
	ents, _ := os.ReadDir(string(schema.PodDir(pod).App("a")))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

func TestWaitReady(t *testing.T) {
	if err := WaitReady(strings.NewReader("ok\n")); err != nil {
		t.Error(err)
	}
	if err := WaitReady(strings.NewReader("")); err == nil {
		t.Error("empty readiness accepted")
	}
	if err := WaitReady(strings.NewReader("no such app\n")); err == nil || !strings.Contains(err.Error(), "no such app") {
		t.Errorf("error readiness: %v", err)
	}
}

// fakeServer answers each connection with handler.
func fakeServer(t *testing.T, handler func(req Request, conn net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl") // short path: unix socket names are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", schema.PodDir(dir).Stage1Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				var req Request
				line, err := readLine(conn)
				if err != nil || json.Unmarshal(line, &req) != nil {
					return
				}
				handler(req, conn)
			}()
		}
	}()
	return dir
}

func readLine(r io.Reader) ([]byte, error) {
	var out []byte
	b := make([]byte, 1)
	for {
		if _, err := r.Read(b); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return out, nil
		}
		out = append(out, b[0])
	}
}

func reply(conn net.Conn, resp Response) {
	b, _ := json.Marshal(resp)
	conn.Write(append(b, '\n'))
}

func TestClientErrorsAndStatus(t *testing.T) {
	dir := fakeServer(t, func(req Request, conn net.Conn) {
		switch {
		case req.Op == OpStatus:
			reply(conn, Response{Status: []schema.AppStatus{{Name: "a", State: schema.AppRunning}}})
		case req.App == "missing":
			reply(conn, Response{Error: "no app", Code: CodeNotFound})
		case req.Op == OpRemove:
			reply(conn, Response{Error: "running", Code: CodeRunning})
		case req.Op == OpStop && req.Timeout != 3*time.Second:
			reply(conn, Response{Error: "bad timeout"})
		case req.Op == OpStart && req.App == "slow":
			time.Sleep(2 * time.Second)
		case (req.Op == OpStart || req.Op == OpExec) && req.App == "timed" && req.Deadline.IsZero():
			reply(conn, Response{Error: "no deadline"})
		case req.Op == OpExec && req.App == "timed":
			reply(conn, Response{})
			b, _ := json.Marshal(ExitResult{ExitCode: 0})
			NewFrameWriter(conn).WriteFrame(FrameExit, b)
		default:
			reply(conn, Response{})
		}
	})
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sts, err := c.Status(ctx)
	if err != nil || len(sts) != 1 || sts[0].Name != "a" {
		t.Errorf("status: %v %+v", err, sts)
	}
	if err := c.StartApp(ctx, "missing"); !errors.Is(err, ErrAppNotFound) {
		t.Errorf("missing app: %v", err)
	}
	if err := c.RemoveApp(ctx, "a"); !errors.Is(err, ErrAppRunning) {
		t.Errorf("remove running: %v", err)
	}
	if err := c.StopApp(ctx, "a", 3*time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.StartApp(tctx, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("deadline not honoured: %v", d)
	}
	tctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.StartApp(tctx, "timed"); err != nil {
		t.Errorf("start with a deadline: %v", err) // the supervisor bounds a restore by it
	}
	if _, err := c.Exec(tctx, ExecRequest{App: "timed", Args: []string{"true"}}); err != nil {
		t.Errorf("exec with a deadline: %v", err) // the supervisor bounds its set-up by it
	}
	if _, err := Dial(t.TempDir()); !errors.Is(err, ErrNoSupervisor) {
		t.Errorf("dial without supervisor: %v", err)
	}
}

func TestClientExecStream(t *testing.T) {
	dir := fakeServer(t, func(req Request, conn net.Conn) {
		if req.Op != OpExec || req.Exec == nil || !req.Exec.Stdin || req.Exec.Args[0] != "cat" {
			reply(conn, Response{Error: "bad request", Code: CodeInvalid})
			return
		}
		reply(conn, Response{})
		fw := NewFrameWriter(conn)
		// echo stdin to stdout until stdin closes, report resizes on stderr
		for {
			typ, p, err := ReadFrame(conn)
			if err != nil {
				return
			}
			switch typ {
			case FrameStdin:
				fw.WriteFrame(FrameStdout, p)
			case FrameResize:
				fw.WriteFrame(FrameStderr, p)
			case FrameStdinClose:
				b, _ := json.Marshal(ExitResult{ExitCode: 7})
				fw.WriteFrame(FrameExit, b)
				return
			}
		}
	})
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	resize := make(chan TermSize, 1)
	resize <- TermSize{Width: 100, Height: 30}
	// A reader that waits until the resize frame went out, so the order is
	// deterministic.
	stdin := io.MultiReader(delayReader{100 * time.Millisecond}, strings.NewReader("hello"))
	code, err := c.Exec(context.Background(), ExecRequest{App: "a", Args: []string{"cat"}, Stdin: stdin, Stdout: &out, Stderr: &errb, Resize: resize})
	if err != nil || code != 7 {
		t.Fatalf("exec: %d %v", code, err)
	}
	if out.String() != "hello" || !strings.Contains(errb.String(), `"width":100`) {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	if _, err := c.Exec(context.Background(), ExecRequest{App: "a", Args: []string{"ls"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid exec: %v", err)
	}
}

type delayReader struct{ d time.Duration }

func (r delayReader) Read([]byte) (int, error) { time.Sleep(r.d); return 0, io.EOF }

func TestLongSocketPath(t *testing.T) {
	base, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := schema.PodDir(dir).Stage1Socket()
	if _, err := net.Listen("unix", sock); err == nil {
		t.Fatalf("a %d-byte socket path fits: the test proves nothing", len(sock))
	}
	addr, release, err := ShortSocketPath(sock)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", addr)
	release()
	if err != nil {
		t.Fatalf("listen on %d-byte path: %v", len(sock), err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if _, err := readLine(conn); err == nil {
				reply(conn, Response{Status: []schema.AppStatus{{Name: "x"}}})
			}
			conn.Close()
		}
	}()
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sts, err := c.Status(ctx); err != nil || len(sts) != 1 {
		t.Errorf("status over a long socket path: %v %+v", err, sts)
	}
}
