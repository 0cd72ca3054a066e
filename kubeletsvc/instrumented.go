package kubeletsvc

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// instrument is the one wrapper around every RPC: it refuses unauthorized
// peers, recovers panics into Internal, logs each call and maps errors to
// gRPC codes.
type instrument struct {
	log  *slog.Logger
	auth *authorizer
}

// unary is the grpc.UnaryServerInterceptor.
func (in *instrument) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			in.log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("internal error in %s: panic: %v", info.FullMethod, r)
			err = internalStatus(err)
		}
		in.logCall(info.FullMethod, start, err)
	}()
	if in.auth != nil {
		if aerr := in.auth.check(ctx); aerr != nil {
			return nil, toStatus(aerr)
		}
	}
	resp, err = handler(ctx, req)
	return resp, toStatus(err)
}

// stream is the grpc.StreamServerInterceptor.
func (in *instrument) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			in.log.Error("panic in stream handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = internalStatus(fmt.Errorf("internal error in %s: panic: %v", info.FullMethod, r))
		}
		in.logCall(info.FullMethod, start, err)
	}()
	if in.auth != nil {
		if aerr := in.auth.check(ss.Context()); aerr != nil {
			return toStatus(aerr)
		}
	}
	return toStatus(handler(srv, ss))
}

func (in *instrument) logCall(method string, start time.Time, err error) {
	d := time.Since(start)
	if err != nil {
		level := slog.LevelWarn
		if status.Code(err) == codes.NotFound {
			level = slog.LevelDebug // the kubelet asks after removed objects all the time
		}
		in.log.Log(context.Background(), level, "rpc failed", "method", method, "duration", d, "error", err)
		return
	}
	in.log.Debug("rpc", "method", method, "duration", d)
}
