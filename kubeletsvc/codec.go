package kubeletsvc

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	protobuf "google.golang.org/protobuf/proto"
)

// An unfiltered List* answer at 500 pods is ~100 KB whose encoding (maps
// through reflection) was most of the call. The answers of the kept
// snapshot (list_snapshot.go) are encoded once: the codec sends those
// bytes when such a response is returned again, and encodes anything
// else as usual.

// encodedResponse is a response and its wire form.
type encodedResponse struct {
	msg  protobuf.Message
	data []byte
}

// encode encodes m; nil when it cannot.
func encode(m protobuf.Message) *encodedResponse {
	b, err := protobuf.Marshal(m)
	if err != nil {
		return nil
	}
	return &encodedResponse{msg: m, data: b}
}

// codec is the gRPC proto codec with the kept snapshot's encoded
// responses in front.
type codec struct {
	encoding.CodecV2
	svc *criService
}

func newCodec(svc *criService) codec { return codec{encoding.GetCodecV2(proto.Name), svc} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if s := c.svc.snap.Load(); s != nil {
		for _, e := range []*encodedResponse{s.sandboxesEnc.Load(), s.containersEnc.Load()} {
			if e != nil && e.msg == v {
				return mem.BufferSlice{mem.SliceBuffer(e.data)}, nil
			}
		}
	}
	return c.CodecV2.Marshal(v)
}
