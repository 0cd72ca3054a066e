package kubeletsvc

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

func TestSandboxAnnotationsRoundTrip(t *testing.T) {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "prod", Uid: "u1", Attempt: 2},
		Labels:       map[string]string{"app": "web"},
		LogDirectory: "/var/log/pods/x",
	}
	annos, err := sandboxAnnotations(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := sandboxConfigOf(annos)
	if err != nil || !proto.Equal(got, cfg) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if PodName(annos) != "prod/web" || PodName(map[string]string{}) != "" {
		t.Fatalf("PodName = %q", PodName(annos))
	}
	if c, err := containerConfigOf(annos); c != nil || err != nil {
		t.Fatalf("a sandbox's annotations decoded as a container: %v %v", c, err)
	}
}

func TestContainerAnnotationsRoundTrip(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "FooBar", Attempt: 1},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Envs:     []*runtimeapi.KeyValue{{Key: "A", Value: []byte("b")}},
	}
	annos, err := containerAnnotations("id1", cfg, "sha256:abc", "busybox")
	if err != nil {
		t.Fatal(err)
	}
	got, err := containerConfigOf(annos)
	if err != nil || !proto.Equal(got, cfg) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if ContainerName(annos) != "FooBar" || ContainerID(annos) != "id1" {
		t.Fatalf("ContainerName %q ContainerID %q", ContainerName(annos), ContainerID(annos))
	}
}

func TestAppName(t *testing.T) {
	tests := []struct {
		name    string
		attempt uint32
		want    string
	}{
		{"web", 0, "web-0"},
		{"FooBar", 3, "FooBar-3"},
		{"a b/c", 1, "a-b-c-1"},
		{"_x", 0, "c_x-0"},
		{"", 0, "c-0"},
	}
	for _, tc := range tests {
		if got := appName(&runtimeapi.ContainerMetadata{Name: tc.name, Attempt: tc.attempt}); got != tc.want {
			t.Errorf("appName(%q, %d) = %q, want %q", tc.name, tc.attempt, got, tc.want)
		}
	}
}

func TestContainerIDEncodesPod(t *testing.T) {
	uuid, err := stage0.NewUUID()
	if err != nil {
		t.Fatal(err)
	}
	id, err := newContainerID(uuid)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := podOfContainerID(id); !ok || got != uuid {
		t.Fatalf("podOfContainerID(%s) = %s, %v; want %s", id, got, ok, uuid)
	}
	if _, ok := podOfContainerID("abc"); ok {
		t.Fatal("a short ID parsed")
	}
}

// TestConfigAnnotationFormats: configs are written in the wire format and
// the protojson of pods made by earlier versions is still read.
func TestConfigAnnotationFormats(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "web"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}
	old, err := protojson.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := encodeConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{string(old), enc} {
		var got runtimeapi.ContainerConfig
		if err := decodeConfig(raw, &got); err != nil || !proto.Equal(&got, cfg) {
			t.Errorf("decode %.40q: %v, %v", raw, &got, err)
		}
	}
}
