package kubeletsvc

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// notSupported are the RPCs answered with Unimplemented: none.
var notSupported = map[string]bool{}

// TestEveryRPCImplemented calls every RPC of both CRI services, as this
// cri-api version declares them, with an empty request: none may fall
// through to the generated Unimplemented stubs (a new RPC in a cri-api
// update fails here until it is served).
func TestEveryRPCImplemented(t *testing.T) {
	e := newTestEnv(t)
	for _, sd := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range sd.Methods {
			err := e.conn.Invoke(e.ctx, "/"+sd.ServiceName+"/"+m.MethodName, &emptypb.Empty{}, &emptypb.Empty{})
			checkImplemented(t, m.MethodName, err)
		}
		for _, sm := range sd.Streams {
			ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond) // GetContainerEvents never ends
			err := recvAll(ctx, e.conn, &sd, sm)
			cancel()
			if status.Code(err) == codes.DeadlineExceeded {
				err = nil
			}
			checkImplemented(t, sm.StreamName, err)
		}
	}
}

func checkImplemented(t *testing.T, name string, err error) {
	t.Helper()
	unimpl := status.Code(err) == codes.Unimplemented
	switch {
	case notSupported[name] && !unimpl:
		t.Errorf("%s: %v, want Unimplemented", name, err)
	case !notSupported[name] && unimpl:
		t.Errorf("%s is not implemented: %v", name, err)
	}
}

// recvAll opens the server stream sm with an empty request and reads it to
// its end.
func recvAll(ctx context.Context, conn *grpc.ClientConn, sd *grpc.ServiceDesc, sm grpc.StreamDesc) error {
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{StreamName: sm.StreamName, ServerStreams: true}, "/"+sd.ServiceName+"/"+sm.StreamName)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(&emptypb.Empty{}); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for {
		if err := cs.RecvMsg(&emptypb.Empty{}); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
