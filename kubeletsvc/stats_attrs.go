package kubeletsvc

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	protobuf "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// The attributes of a stats item (ID, metadata, labels, annotations) do
// not change while its sandbox or container does, but their maps were
// most of the encoding of a List*Stats answer (through reflection, on
// each call). Each sandbox and container of the kept snapshot encodes
// them once; an item carries those bytes as its unknown fields, which the
// encoder copies as they are (after the other fields: protobuf allows any
// order). The client decodes them as the attributes field; in this
// process an item's Attributes is nil.

// keptStats is the stats item of a container or sandbox built from src,
// stage0's stats of it: stage0 returns the same *AppStats until its next
// read, and the item stays the answer while it does (its CPU rate too:
// the same sample gives the same rate). A List*Stats call then allocates
// nothing per item. nil src: a container that does not run.
type keptStats[T any] struct {
	src  *stage0.AppStats
	ctrs []*runtimeapi.ContainerStats // of a sandbox's item
	item *T
}

// rawAttrs is the encoded attributes field of one item, made once.
type rawAttrs struct {
	once sync.Once
	b    protoreflect.RawFields
}

// The attributes fields' numbers, looked up on first use: reading a field
// descriptor builds the whole CRI file's descriptors (~0.36 MB), which
// every rkt command would otherwise pay at start.
var (
	ctrAttrsField = sync.OnceValue(func() protowire.Number { return attrsField(&runtimeapi.ContainerStats{}) })
	sbAttrsField  = sync.OnceValue(func() protowire.Number { return attrsField(&runtimeapi.PodSandboxStats{}) })
)

func attrsField(m protobuf.Message) protowire.Number {
	return m.ProtoReflect().Descriptor().Fields().ByName("attributes").Number()
}

// get returns m as the field numbered num(), encoding it on first use.
func (r *rawAttrs) get(num func() protowire.Number, m func() protobuf.Message) protoreflect.RawFields {
	r.once.Do(func() {
		b, err := protobuf.Marshal(m())
		if err != nil {
			return // leaves the item without attributes rather than fail the call
		}
		r.b = protowire.AppendBytes(protowire.AppendTag(nil, num(), protowire.BytesType), b)
	})
	return r.b
}

// statsItem returns the container's stats item with its attributes.
func (ct *container) statsItem() *runtimeapi.ContainerStats {
	out := &runtimeapi.ContainerStats{}
	out.ProtoReflect().SetUnknown(ct.attrs.get(ctrAttrsField, func() protobuf.Message {
		return &runtimeapi.ContainerAttributes{Id: ct.id, Metadata: ct.cfg.GetMetadata(), Labels: ct.cfg.GetLabels(), Annotations: ct.cfg.GetAnnotations()}
	}))
	return out
}

// statsItem returns the sandbox's stats item with its attributes.
func (s *sandbox) statsItem() *runtimeapi.PodSandboxStats {
	out := &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{}}
	out.ProtoReflect().SetUnknown(s.attrs.get(sbAttrsField, func() protobuf.Message {
		return &runtimeapi.PodSandboxAttributes{Id: s.ID(), Metadata: s.cfg.GetMetadata(), Labels: s.cfg.GetLabels(), Annotations: s.cfg.GetAnnotations()}
	}))
	return out
}
