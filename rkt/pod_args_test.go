package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	pm := func(proto string, ctr, host int, ip string) schema.PortMapping {
		return schema.PortMapping{Protocol: proto, ContainerPort: ctr, HostPort: host, HostIP: ip}
	}
	cases := map[string]portSpec{
		// docker and podman: host first
		"8080:80":                {PortMapping: pm("tcp", 80, 8080, "")},
		"5353:53/udp":            {PortMapping: pm("udp", 53, 5353, "")},
		"5353:53/UDP":            {PortMapping: pm("udp", 53, 5353, "")},
		"127.0.0.1:8080:80":      {PortMapping: pm("tcp", 80, 8080, "127.0.0.1")},
		"127.0.0.1:8080:80/sctp": {PortMapping: pm("sctp", 80, 8080, "127.0.0.1")},
		"[::1]:8080:80/tcp":      {PortMapping: pm("tcp", 80, 8080, "::1")},
		"0.0.0.0:80:80":          {PortMapping: pm("tcp", 80, 80, "0.0.0.0")},
		// rkt 1.x: a named port, then the host
		"80-tcp:8080":           {name: "80-tcp", PortMapping: schema.PortMapping{HostPort: 8080}},
		"http:127.0.0.1:8080":   {name: "http", PortMapping: schema.PortMapping{HostPort: 8080, HostIP: "127.0.0.1"}},
		"53-udp:[fd00::1]:5353": {name: "53-udp", PortMapping: schema.PortMapping{HostPort: 5353, HostIP: "fd00::1"}},
	}
	for in, want := range cases {
		got, err := parsePort(in)
		if err != nil || got != want {
			t.Errorf("parsePort(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"80",          // no host port
		"80/tcp:8080", // container first: rejected, not silently reversed
		"8080:80/xyz", // protocol
		"0:80", "8080:0", "70000:80", "8080:70000",
		"8000-8010:8000-8010", // ranges
		"::1:8080:80",         // IPv6 without brackets
		"bad.host:8080:80",    // not an IP
		"1.2.3.4:5:6:7",
		"http:",
		"http:8080:80", // a name takes [HOSTIP:]HOSTPORT only
		"Http:8080",    // names are lowercase
		"http:tcp:0:1.2.3.4:80",
		"http:tcp:80:1.2.3.4",
	} {
		if got, err := parsePort(bad); err == nil {
			t.Errorf("parsePort(%q) = %+v, accepted", bad, got)
		}
	}
}

func TestResolvePortNames(t *testing.T) {
	exposed := map[string]schema.PortMapping{"80-tcp": {Protocol: "tcp", ContainerPort: 80}, "53-udp": {Protocol: "udp", ContainerPort: 53}}
	got, err := resolvePortNames([]portSpec{{name: "53-udp", PortMapping: schema.PortMapping{HostPort: 5353, HostIP: "127.0.0.1"}}}, exposed)
	if want := []schema.PortMapping{{Protocol: "udp", ContainerPort: 53, HostPort: 5353, HostIP: "127.0.0.1"}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("resolvePortNames = %+v, %v; want %+v", got, err, want)
	}
	if _, err := resolvePortNames([]portSpec{{name: "443-tcp"}}, exposed); err == nil || !strings.Contains(err.Error(), "53-udp, 80-tcp") {
		t.Errorf("an unknown name: %v; want an error listing the exposed names", err)
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
