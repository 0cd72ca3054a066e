package kubeletsvc

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	utilexec "k8s.io/utils/exec"

	"github.com/rkt/rkt/stage0"
)

func TestStreamExecExitCode(t *testing.T) {
	e := newTestEnv(t)
	id := e.startContainer(t, e.runPod(t, "web"), "app")
	e.rt.exec = func(ctx context.Context, o stage0.ExecOptions) (int, error) { return 2, nil }
	err := (&streamRuntime{svc: e.svc}).Exec(e.ctx, id, []string{"false"}, nil, nil, nil, false, nil)
	var ce utilexec.CodeExitError
	if !errors.As(err, &ce) || ce.Code != 2 {
		t.Errorf("Exec: %v, want a CodeExitError with code 2", err)
	}
}

func TestStreamPortForward(t *testing.T) {
	e := newTestEnv(t)
	pod := e.runPod(t, "web")
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- (&streamRuntime{svc: e.svc}).PortForward(e.ctx, pod, 8080, server) }()
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want the echo", buf, err)
	}
	client.Close()
	<-done
	if calls := e.rt.called(); calls[len(calls)-1] != "DialPod "+pod+" tcp 127.0.0.1:8080" {
		t.Errorf("last stage0 call %q, want a dial of the pod's loopback port", calls[len(calls)-1])
	}
}
