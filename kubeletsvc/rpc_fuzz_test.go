package kubeletsvc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// unaryMethod is one unary RPC of the CRI and the type of its request.
type unaryMethod struct {
	name string // "/runtime.v1.RuntimeService/Version"
	req  protoreflect.MessageType
}

var errTypeFound = errors.New("request type found")

// unaryMethods lists every unary RPC of both CRI services, in the order
// the generated service descriptions give them. A method's request type
// is what its generated handler asks its decoder to fill.
func unaryMethods(tb testing.TB) []unaryMethod {
	var out []unaryMethod
	for _, sd := range []grpc.ServiceDesc{runtimeapi.RuntimeService_ServiceDesc, runtimeapi.ImageService_ServiceDesc} {
		for _, m := range sd.Methods {
			var typ protoreflect.MessageType
			m.Handler(nil, context.Background(), func(v any) error {
				typ = v.(proto.Message).ProtoReflect().Type()
				return errTypeFound
			}, nil)
			if typ == nil {
				tb.Fatalf("no request type for %s", m.MethodName)
			}
			out = append(out, unaryMethod{"/" + sd.ServiceName + "/" + m.MethodName, typ})
		}
	}
	return out
}

// Placeholders a fuzzed request may hold in any string field: the call
// gets the live sandbox's and container's IDs in their place.
const (
	sandboxPlaceholder   = "@sb"
	containerPlaceholder = "@ct"
)

// fillIDs replaces the placeholders in every string field of m, nested
// messages, lists and map values included.
func fillIDs(m protoreflect.Message, ids map[string]string) {
	str := func(v protoreflect.Value) (protoreflect.Value, bool) {
		if id, ok := ids[v.String()]; ok {
			return protoreflect.ValueOfString(id), true
		}
		return v, false
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if fd.Kind() == protoreflect.StringKind {
					if nv, ok := str(l.Get(i)); ok {
						l.Set(i, nv)
					}
				} else if fd.Message() != nil {
					fillIDs(l.Get(i).Message(), ids)
				}
			}
		case fd.IsMap():
			mp := v.Map()
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if fd.MapValue().Kind() == protoreflect.StringKind {
					if nv, ok := str(mv); ok {
						mp.Set(k, nv)
					}
				} else if fd.MapValue().Message() != nil {
					fillIDs(mv.Message(), ids)
				}
				return true
			})
		case fd.Kind() == protoreflect.StringKind:
			if nv, ok := str(v); ok {
				m.Set(fd, nv)
			}
		case fd.Message() != nil:
			fillIDs(v.Message(), ids)
		}
		return true
	})
}

// seedRequest is req with the placeholders in its top-level ID fields.
func seedRequest(req protoreflect.Message) protoreflect.Message {
	fields := req.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.StringKind || fd.IsList() || fd.IsMap() {
			continue
		}
		switch fd.Name() {
		case "pod_sandbox_id":
			req.Set(fd, protoreflect.ValueOfString(sandboxPlaceholder))
		case "container_id":
			req.Set(fd, protoreflect.ValueOfString(containerPlaceholder))
		}
	}
	return req
}

// FuzzCRIRequest sends arbitrary requests (protobuf bytes, IDs from
// placeholders) to every unary RPC of a service on fakes holding a pod
// with a running container: no call panics, hangs or answers without a
// gRPC code of its own (Unknown), and the service answers a list after it.
func FuzzCRIRequest(f *testing.F) {
	methods := unaryMethods(f)
	for i, m := range methods {
		f.Add(uint16(i), []byte{})
		f.Add(uint16(i), mustMarshal(f, proto.Message(seedRequest(m.req.New()).Interface())))
	}
	index := map[string]uint16{}
	for i, m := range methods {
		index[m.name[strings.LastIndex(m.name, "/")+1:]] = uint16(i)
	}
	full := []struct {
		method string
		req    proto.Message
	}{
		{"RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("q")}},
		{"CreateContainer", &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxPlaceholder,
			Config: containerConfig("c2", "busybox"), SandboxConfig: sandboxConfig("p")}},
		{"ExecSync", &runtimeapi.ExecSyncRequest{ContainerId: containerPlaceholder, Cmd: []string{"ls"}, Timeout: 1}},
		{"Exec", &runtimeapi.ExecRequest{ContainerId: containerPlaceholder, Cmd: []string{"sh"}, Stdout: true}},
		{"PortForward", &runtimeapi.PortForwardRequest{PodSandboxId: sandboxPlaceholder, Port: []int32{80}}},
		{"UpdateContainerResources", &runtimeapi.UpdateContainerResourcesRequest{ContainerId: containerPlaceholder,
			Linux: &runtimeapi.LinuxContainerResources{CpuShares: 2, MemoryLimitInBytes: 1 << 20}}},
		{"ListContainers", &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			PodSandboxId: sandboxPlaceholder, LabelSelector: map[string]string{"ctr": "c"}}}},
		{"ContainerStatus", &runtimeapi.ContainerStatusRequest{ContainerId: containerPlaceholder, Verbose: true}},
		{"PullImage", &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}},
		{"RemoveImage", &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}},
		{"StopContainer", &runtimeapi.StopContainerRequest{ContainerId: containerPlaceholder, Timeout: 1}},
		{"CheckpointContainer", &runtimeapi.CheckpointContainerRequest{ContainerId: containerPlaceholder, Location: "/tmp/x.tar"}},
	}
	for _, s := range full {
		i, ok := index[s.method]
		if !ok {
			f.Fatalf("no RPC %s", s.method)
		}
		f.Add(i, mustMarshal(f, s.req))
	}
	f.Fuzz(func(t *testing.T, which uint16, body []byte) {
		m := methods[int(which)%len(methods)]
		req := m.req.New().Interface()
		if err := proto.Unmarshal(body, req); err != nil {
			return
		}
		e := newTestEnv(t)
		e.withStream(t)
		pod := e.runPod(t, "p")
		ctr := e.startContainer(t, pod, "c")
		fillIDs(req.ProtoReflect(), map[string]string{sandboxPlaceholder: pod, containerPlaceholder: ctr})

		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		err := e.conn.Invoke(ctx, m.name, req, &emptypb.Empty{})
		switch code := status.Code(err); {
		case code == codes.Unknown:
			t.Fatalf("%s(%v): an error without a code: %v", m.name, req, err)
		case code == codes.Internal && strings.Contains(err.Error(), "panic"):
			t.Fatalf("%s(%v): %v", m.name, req, err)
		case code == codes.DeadlineExceeded && ctx.Err() != nil:
			t.Fatalf("%s(%v) did not answer in 10 s", m.name, req)
		}
		if _, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil {
			t.Fatalf("ListPodSandbox after %s(%v): %v", m.name, req, err)
		}
	})
}

// maxSequence bounds the calls of one FuzzCRISequence input.
const maxSequence = 12

// encodeCall is one call of a FuzzCRISequence input: the method's index,
// the request's length (up to 255 bytes) and the request.
func encodeCall(tb testing.TB, methods []unaryMethod, name string, req proto.Message) []byte {
	for i, m := range methods {
		if strings.HasSuffix(m.name, "/"+name) {
			b := mustMarshal(tb, req)
			if len(b) > 255 {
				tb.Fatalf("seed request of %s is %d bytes", name, len(b))
			}
			return append([]byte{byte(i), byte(len(b))}, b...)
		}
	}
	tb.Fatalf("no RPC %s", name)
	return nil
}

// FuzzCRISequence runs a sequence of arbitrary calls (see encodeCall) on
// one service on fakes; "@sb" and "@ct" stand for the sandbox and the
// container the sequence made last. After each call, what the lists show
// and what the status calls answer agree: every listed sandbox and
// container has a status, in the same state, and nothing removed is
// listed, so the service's kept views stay coherent whatever the order of
// the calls.
func FuzzCRISequence(f *testing.F) {
	methods := unaryMethods(f)
	var life []byte
	for _, c := range []struct {
		name string
		req  proto.Message
	}{
		{"RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("p")}},
		{"CreateContainer", &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxPlaceholder,
			Config: containerConfig("c", "busybox"), SandboxConfig: sandboxConfig("p")}},
		{"StartContainer", &runtimeapi.StartContainerRequest{ContainerId: containerPlaceholder}},
		{"StopContainer", &runtimeapi.StopContainerRequest{ContainerId: containerPlaceholder}},
		{"CreateContainer", &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxPlaceholder,
			Config: containerConfig("c", "busybox"), SandboxConfig: sandboxConfig("p")}},
		{"RemoveContainer", &runtimeapi.RemoveContainerRequest{ContainerId: containerPlaceholder}},
		{"StopPodSandbox", &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxPlaceholder}},
		{"RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("p")}},
		{"RemovePodSandbox", &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandboxPlaceholder}},
		{"RunPodSandbox", &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("p")}},
	} {
		life = append(life, encodeCall(f, methods, c.name, c.req)...)
	}
	f.Add(life)
	f.Fuzz(func(t *testing.T, seq []byte) {
		e := newTestEnv(t)
		e.withStream(t)
		e.haveImage("busybox")
		ids := map[string]string{}
		made := map[string]string{} // ID -> what made it: RunPodSandbox or CreateContainer
		gone := map[string]bool{}   // IDs of sandboxes and containers removed
		for n := 0; n < maxSequence && len(seq) >= 2; n++ {
			m := methods[int(seq[0])%len(methods)]
			size := min(int(seq[1]), len(seq)-2)
			body := seq[2 : 2+size]
			seq = seq[2+size:]
			req := m.req.New().Interface()
			if proto.Unmarshal(body, req) != nil {
				continue
			}
			fillIDs(req.ProtoReflect(), ids)
			reply := &emptypb.Empty{}
			err := e.conn.Invoke(e.ctx, m.name, req, reply)
			switch code := status.Code(err); {
			case code == codes.Unknown, code == codes.Internal && strings.Contains(err.Error(), "panic"):
				t.Fatalf("call %d, %s(%v): %v", n, m.name, req, err)
			case err == nil:
				rememberID(t, m.name, reply, ids, made)
				// removing what does not exist (or is of the other
				// kind: a sandbox's ID to RemoveContainer) succeeds
				// and removes nothing
				switch r := req.(type) {
				case *runtimeapi.RemoveContainerRequest:
					if made[r.GetContainerId()] == "CreateContainer" {
						gone[r.GetContainerId()] = true
					}
				case *runtimeapi.RemovePodSandboxRequest:
					if made[r.GetPodSandboxId()] == "RunPodSandbox" {
						gone[r.GetPodSandboxId()] = true
					}
				}
			}
			checkViews(t, e, fmt.Sprintf("after call %d, %s(%v)", n, m.name, req), gone)
		}
	})
}

// rememberID keeps the ID a RunPodSandbox or CreateContainer answered
// (reply holds the answer's fields as unknown ones) for the placeholders,
// and which of the two made it in made.
func rememberID(t *testing.T, method string, reply *emptypb.Empty, ids, made map[string]string) {
	switch {
	case strings.HasSuffix(method, "/RunPodSandbox"):
		r := &runtimeapi.RunPodSandboxResponse{}
		if err := proto.Unmarshal(reply.ProtoReflect().GetUnknown(), r); err != nil {
			t.Fatal(err)
		}
		ids[sandboxPlaceholder] = r.GetPodSandboxId()
		made[r.GetPodSandboxId()] = "RunPodSandbox"
	case strings.HasSuffix(method, "/CreateContainer"):
		r := &runtimeapi.CreateContainerResponse{}
		if err := proto.Unmarshal(reply.ProtoReflect().GetUnknown(), r); err != nil {
			t.Fatal(err)
		}
		ids[containerPlaceholder] = r.GetContainerId()
		made[r.GetContainerId()] = "CreateContainer"
	}
}

// checkViews fails unless every listed sandbox and container has a status
// in the state the list gives, and none removed (gone, by ID; a container
// of a removed sandbox too) is listed.
func checkViews(t *testing.T, e *testEnv, when string, gone map[string]bool) {
	t.Helper()
	sbs, err := e.rs.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("%s: ListPodSandbox: %v", when, err)
	}
	for _, sb := range sbs.GetItems() {
		if gone[sb.GetId()] {
			t.Fatalf("%s: sandbox %s listed after its removal", when, sb.GetId())
		}
		st, err := e.rs.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId()})
		if err != nil {
			t.Fatalf("%s: sandbox %s listed %v, its status: %v", when, sb.GetId(), sb.GetState(), err)
		}
		if st.GetStatus().GetState() != sb.GetState() {
			t.Fatalf("%s: sandbox %s listed %v, status %v", when, sb.GetId(), sb.GetState(), st.GetStatus().GetState())
		}
	}
	cts, err := e.rs.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatalf("%s: ListContainers: %v", when, err)
	}
	for _, c := range cts.GetContainers() {
		if gone[c.GetId()] || gone[c.GetPodSandboxId()] {
			t.Fatalf("%s: container %s of sandbox %s listed after its or its sandbox's removal", when, c.GetId(), c.GetPodSandboxId())
		}
		st, err := e.rs.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		if err != nil {
			t.Fatalf("%s: container %s listed %v, its status: %v", when, c.GetId(), c.GetState(), err)
		}
		if st.GetStatus().GetState() != c.GetState() {
			t.Fatalf("%s: container %s listed %v, status %v", when, c.GetId(), c.GetState(), st.GetStatus().GetState())
		}
	}
}
