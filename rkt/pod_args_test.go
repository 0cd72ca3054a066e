package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rkt/rkt/pkg/schema"
)

func TestParsePodArgs(t *testing.T) {
	var pf podFlags
	var debug bool
	inherited := pflag.NewFlagSet("g", pflag.ContinueOnError)
	inherited.BoolVar(&debug, "debug", false, "")
	fs := podFlagSet(&pf, inherited, true)
	apps, err := parsePodArgs([]string{
		"--net=none", "--debug", "img1", "--exec", "/bin/sh", "--set-env=A=1", "--readonly-rootfs", "--", "-c", "echo hi", "---",
		"--hostname", "h", "img2", "--name=two", "--memory=64M",
	}, fs)
	if err != nil {
		t.Fatal(err)
	}
	if pf.net != "none" || pf.hostname != "h" || !debug {
		t.Errorf("pod flags: %+v debug=%v", pf, debug)
	}
	if len(apps) != 2 || apps[0].image != "img1" || apps[1].image != "img2" {
		t.Fatalf("apps: %+v", apps)
	}
	a := apps[0].flags
	if a.exec != "/bin/sh" || !reflect.DeepEqual(a.env, []string{"A=1"}) || !a.readonlyRootfs || !reflect.DeepEqual(a.args, []string{"-c", "echo hi"}) {
		t.Errorf("app 1 flags: %+v", a)
	}
	if b := apps[1].flags; b.name != "two" || b.memory != "64M" || b.exec != "" {
		t.Errorf("app 2 flags: %+v", b)
	}
	for _, bad := range [][]string{{"--exec=/x", "img"}, {"img", "--bogus"}, {"img", "--name"}, {"--", "x"}} {
		if _, err := parsePodArgs(bad, podFlagSet(&podFlags{}, pflag.NewFlagSet("g", pflag.ContinueOnError), true)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParsePort(t *testing.T) {
	cases := map[string]schema.PortMapping{
		"80:8080":               {Protocol: "tcp", ContainerPort: 80, HostPort: 8080},
		"53/udp:5353":           {Protocol: "udp", ContainerPort: 53, HostPort: 5353},
		"80-tcp:127.0.0.1:8080": {Protocol: "tcp", ContainerPort: 80, HostPort: 8080, HostIP: "127.0.0.1"},
	}
	for in, want := range cases {
		got, err := parsePort(in)
		if err != nil || got != want {
			t.Errorf("parsePort(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"80", "80/xyz:1", "0:1", "80:70000", "80:bad:1"} {
		if _, err := parsePort(bad); err == nil {
			t.Errorf("parsePort(%q) accepted", bad)
		}
	}
}

func TestParseVolumeAndMount(t *testing.T) {
	dir := t.TempDir()
	v, err := parseVolume("data,kind=host,source=" + dir + ",readOnly=true")
	if err != nil || v != (schema.Volume{Name: "data", Kind: "host", Source: dir, ReadOnly: true}) {
		t.Errorf("host volume: %+v %v", v, err)
	}
	if v, err := parseVolume("tmp"); err != nil || v.Kind != "empty" {
		t.Errorf("empty volume: %+v %v", v, err)
	}
	for _, bad := range []string{"x,kind=host", "x,kind=nfs", ",kind=empty", "x,kind=host,source=/does/not/exist", "x,color=red"} {
		if _, err := parseVolume(bad); err == nil {
			t.Errorf("parseVolume(%q) accepted", bad)
		}
	}
	m, err := parseMount("volume=data,target=/d,readOnly=true", map[string]bool{"data": true})
	if err != nil || m.Volume != "data" || m.Destination != "/d" || !m.ReadOnly {
		t.Errorf("mount: %+v %v", m, err)
	}
	if _, err := parseMount("volume=other,target=/d", map[string]bool{"data": true}); err == nil {
		t.Error("mount of an undeclared volume accepted")
	}
}

func TestParseSizes(t *testing.T) {
	for in, want := range map[string]int64{"64M": 64 << 20, "1G": 1 << 30, "512Ki": 512 << 10, "1000": 1000, "1.5G": 3 << 29} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]int64{"500m": 500, "1.5": 1500, "2": 2000} {
		if got, err := parseCPU(in); err != nil || got != want {
			t.Errorf("parseCPU(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1X"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

func TestFollowLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	content := "2026-11-30T03:00:00.000000001Z stdout F hello\n" +
		"2026-11-30T03:00:00.1Z stderr P part\n" +
		"2026-11-30T03:00:00.2Z stderr F ial\n" +
		"garbage line\n" +
		"2026-11-30T03:00:00.3Z stdout F \n" +
		"2026-11-30T03:00:00.4Z stdout F incomplete"
	os.WriteFile(path, []byte(content), 0o644)
	var out, errOut bytes.Buffer
	lf := &logFollower{path: path}
	if err := followLogs(context.Background(), []*logFollower{lf}, &out, &errOut, false, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\n\n" || errOut.String() != "partial\n" {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
}
