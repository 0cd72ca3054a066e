package kubeletsvc

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/pkg/schema"
)

// CRI metadata is kept in pod and app annotations so that the pod
// directories alone describe every sandbox and container: a restarted
// service (and `rkt list`) reads it back. The readable keys carry the
// Kubernetes names; the config keys carry the whole CRI config as JSON.
const (
	annoPrefix = "io.rkt.kubelet-service/"

	annoKind      = annoPrefix + "kind" // "sandbox" on CRI pods, "container" on CRI apps
	kindSandbox   = "sandbox"
	kindContainer = "container"

	annoName        = annoPrefix + "name"      // metadata.name
	annoNamespace   = annoPrefix + "namespace" // sandbox metadata.namespace
	annoUID         = annoPrefix + "uid"       // sandbox metadata.uid
	annoAttempt     = annoPrefix + "attempt"   // metadata.attempt
	annoConfig      = annoPrefix + "config"    // PodSandboxConfig / ContainerConfig (encodeConfig)
	annoHandler     = annoPrefix + "runtime-handler"
	annoContainerID = annoPrefix + "container-id" // the CRI container ID of an app
	annoImageRef    = annoPrefix + "image-ref"    // image ID the container runs
	annoImage       = annoPrefix + "image"        // image as the kubelet named it
)

// Kubernetes-readable annotation keys, for `rkt list` and friends.
const (
	// AnnotationKind marks CRI pods ("sandbox") and apps ("container").
	AnnotationKind = annoKind
	// AnnotationName is the Kubernetes name of a CRI pod or container.
	AnnotationName = annoName
	// AnnotationNamespace is the Kubernetes namespace of a CRI pod.
	AnnotationNamespace = annoNamespace
	// AnnotationContainerID is the CRI container ID of an app.
	AnnotationContainerID = annoContainerID
)

// encodeConfig encodes a CRI config for its annotation: the protobuf
// wire format in base64, which is written and read several times faster
// than protojson (a config with 100k env entries: ~30 ms against ~220,
// and a JSON manifest holds it without escaping). The encoding is
// remembered as decoded, so reads after a create decode nothing.
func encodeConfig(cfg proto.Message) (string, error) {
	b, err := proto.Marshal(cfg)
	if err != nil {
		return "", err
	}
	raw := base64.StdEncoding.EncodeToString(b)
	decoded.put(raw, proto.Clone(cfg))
	return raw, nil
}

// decodeConfig decodes an annotation of encodeConfig into cfg; it also
// reads the protojson that pods created by earlier versions carry.
func decodeConfig(raw string, cfg proto.Message) error {
	if strings.HasPrefix(raw, "{") {
		return protojson.Unmarshal([]byte(raw), cfg)
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return err
	}
	return proto.Unmarshal(b, cfg)
}

// sandboxAnnotations encodes a sandbox's CRI metadata for its pod.
func sandboxAnnotations(cfg *runtimeapi.PodSandboxConfig, handler string) (map[string]string, error) {
	b, err := encodeConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the sandbox config: %w", err)
	}
	md := cfg.GetMetadata()
	return map[string]string{
		annoKind:      kindSandbox,
		annoName:      md.GetName(),
		annoNamespace: md.GetNamespace(),
		annoUID:       md.GetUid(),
		annoAttempt:   strconv.FormatUint(uint64(md.GetAttempt()), 10),
		annoConfig:    b,
		annoHandler:   handler,
		// what `rkt list` shows in its NAME column
		schema.AnnotationDisplayName: md.GetNamespace() + "/" + md.GetName(),
	}, nil
}

// OwnsPod reports, from a pod's annotations, whether it is a CRI sandbox:
// the kubelet removes it when it is done with it (stage0.GCOptions.Owned).
func OwnsPod(annotations map[string]string) bool {
	return annotations[annoKind] == kindSandbox
}

// sandboxConfigOf decodes the CRI config of a pod; nil when it is not a
// CRI sandbox.
func sandboxConfigOf(annos map[string]string) (*runtimeapi.PodSandboxConfig, error) {
	if !OwnsPod(annos) {
		return nil, nil
	}
	raw := annos[annoConfig]
	if m, ok := decoded.get(raw); ok {
		return m.(*runtimeapi.PodSandboxConfig), nil
	}
	cfg := &runtimeapi.PodSandboxConfig{}
	if err := decodeConfig(raw, cfg); err != nil {
		return nil, fmt.Errorf("cannot decode the sandbox config annotation: %w", err)
	}
	decoded.put(raw, cfg)
	return cfg, nil
}

// containerAnnotations encodes a container's CRI metadata for its app.
func containerAnnotations(id string, cfg *runtimeapi.ContainerConfig, imageRef, image string) (map[string]string, error) {
	b, err := encodeConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the container config: %w", err)
	}
	return map[string]string{
		annoKind:        kindContainer,
		annoContainerID: id,
		annoName:        cfg.GetMetadata().GetName(),
		annoAttempt:     strconv.FormatUint(uint64(cfg.GetMetadata().GetAttempt()), 10),
		annoConfig:      b,
		annoImageRef:    imageRef,
		annoImage:       image,
		// what `rkt app list` shows in its NAME column
		schema.AnnotationDisplayName: cfg.GetMetadata().GetName(),
	}, nil
}

// containerConfigOf decodes the CRI config of an app; nil when it is not a
// CRI container.
func containerConfigOf(annos map[string]string) (*runtimeapi.ContainerConfig, error) {
	if annos[annoKind] != kindContainer {
		return nil, nil
	}
	raw := annos[annoConfig]
	if m, ok := decoded.get(raw); ok {
		return m.(*runtimeapi.ContainerConfig), nil
	}
	cfg := &runtimeapi.ContainerConfig{}
	if err := decodeConfig(raw, cfg); err != nil {
		return nil, fmt.Errorf("cannot decode the container config annotation: %w", err)
	}
	decoded.put(raw, cfg)
	return cfg, nil
}

// decoded memoizes the decoding of config annotations, keyed by their
// text: every List* call meets the configs of every pod and app, and
// decoding them all (protojson) cost more than the rest of the call. The
// decoded configs are shared: read-only.
var decoded = &decodeMemo{cur: map[string]proto.Message{}}

// decodeMemo is a two-generation cache: what is not used for a whole
// generation (decodeMemoSize insertions) is dropped.
type decodeMemo struct {
	mu        sync.Mutex
	cur, prev map[string]proto.Message
}

const decodeMemoSize = 4096

func (d *decodeMemo) get(raw string) (proto.Message, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.cur[raw]; ok {
		return m, true
	}
	if m, ok := d.prev[raw]; ok {
		d.putLocked(raw, m)
		return m, true
	}
	return nil, false
}

func (d *decodeMemo) put(raw string, m proto.Message) {
	d.mu.Lock()
	d.putLocked(raw, m)
	d.mu.Unlock()
}

func (d *decodeMemo) putLocked(raw string, m proto.Message) {
	if len(d.cur) >= decodeMemoSize {
		d.prev, d.cur = d.cur, map[string]proto.Message{}
	}
	d.cur[raw] = m
}

// sandboxKey is the name a sandbox reserves (name_namespace_uid_attempt).
func sandboxKey(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
}

// containerKey is the name a container reserves in its sandbox.
func containerKey(sandboxID string, md *runtimeapi.ContainerMetadata) string {
	return fmt.Sprintf("%s_%s_%d", md.GetName(), sandboxID, md.GetAttempt())
}

// copyMap returns a copy of m (never nil).
func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// toJSON renders v for verbose info maps.
func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// nowNano is the current time in nanoseconds since the epoch.
func nowNano() int64 { return time.Now().UnixNano() }
