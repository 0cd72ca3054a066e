package tests

import (
	"errors"
	"io"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// criCall is one RPC that went through a criTraceProxy.
type criCall struct {
	Method     string // short name, e.g. RunPodSandbox
	Start, End time.Time
	Err        bool
	Req        []byte // the request, encoded
}

// criTraceProxy is a transparent gRPC proxy in front of a CRI endpoint that
// records when each call starts and ends, as its client (a kubelet) sees it.
type criTraceProxy struct {
	Endpoint string // unix://... for the client
	mu       sync.Mutex
	calls    []criCall
}

// rawFrame is a gRPC message passed through undecoded.
type rawFrame struct{ b []byte }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.(*rawFrame).b, nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	v.(*rawFrame).b = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// startCRITraceProxy listens on a socket in dir and forwards every call to
// endpoint; it is stopped at cleanup.
func startCRITraceProxy(t testing.TB, endpoint, dir string) *criTraceProxy {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatalf("cannot dial %s: %v", endpoint, err)
	}
	sock := filepath.Join(dir, "cri-trace.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &criTraceProxy{Endpoint: "unix://" + sock}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.MaxRecvMsgSize(64<<20),
		grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error { return p.forward(conn, ss) }))
	go srv.Serve(l)
	t.Cleanup(func() { srv.Stop(); conn.Close() })
	return p
}

func (p *criTraceProxy) forward(conn *grpc.ClientConn, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	start := time.Now()
	ctx := ss.Context()
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	// CRI calls are unary or server-streaming: one request.
	var req rawFrame
	if err := ss.RecvMsg(&req); err != nil {
		return err
	}
	if err := cs.SendMsg(&req); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	cs.CloseSend()
	for {
		var f rawFrame
		err = cs.RecvMsg(&f)
		if err == nil {
			err = ss.SendMsg(&f)
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	p.mu.Lock()
	p.calls = append(p.calls, criCall{Method: filepath.Base(method), Start: start, End: time.Now(), Err: err != nil, Req: req.b})
	p.mu.Unlock()
	return err
}

// Calls returns the calls that started in [from, to), in order of start.
func (p *criTraceProxy) Calls(from, to time.Time) []criCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var cs []criCall
	for _, c := range p.calls {
		if !c.Start.Before(from) && c.Start.Before(to) {
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Start.Before(cs[j].Start) })
	return cs
}
