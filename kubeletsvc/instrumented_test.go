package kubeletsvc

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

func TestInstrumentUnary(t *testing.T) {
	in := &instrument{
		log:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		auth: &authorizer{gid: 500, groupsOf: func(int32) ([]int, error) { return nil, nil }},
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/runtime.v1.RuntimeService/Test"}
	asPeer := func(uid uint32) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{
			Addr: &net.UnixAddr{Name: "@", Net: "unix"}, AuthInfo: peerCredInfo{ucred: &unix.Ucred{Pid: 1, Uid: uid, Gid: uid}},
		})
	}
	tests := []struct {
		name    string
		ctx     context.Context
		handler grpc.UnaryHandler
		want    codes.Code
	}{
		{"ok", asPeer(0), func(context.Context, any) (any, error) { return "x", nil }, codes.OK},
		{"not found", asPeer(0), func(context.Context, any) (any, error) { return nil, notFoundf("pod %q", "p") }, codes.NotFound},
		{"panic", asPeer(0), func(context.Context, any) (any, error) { panic("boom") }, codes.Internal},
		{"refused peer", asPeer(1000), func(context.Context, any) (any, error) { return "x", nil }, codes.PermissionDenied},
		{"no peer", context.Background(), func(context.Context, any) (any, error) { return "x", nil }, codes.PermissionDenied},
	}
	for _, tc := range tests {
		_, err := in.unary(tc.ctx, nil, info, tc.handler)
		if got := status.Code(err); got != tc.want {
			t.Errorf("%s: code %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}
}
