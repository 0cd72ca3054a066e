package networking

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rkt/rkt/pkg/schema"
)

// TestPublishedUDPPort: a UDP port published by the pod answers on
// 127.0.0.1:<hostPort> from the host, next to a TCP one.
func TestPublishedUDPPort(t *testing.T) {
	requireRoot(t)
	cfg := testConfig(t)
	ctx := context.Background()
	pn := newPod(t, cfg, "default")
	udpPort, tcpPort := freeUDPPort(t), freePort(t)
	pn.Ports = []schema.PortMapping{
		{Protocol: "udp", ContainerPort: 5353, HostPort: udpPort},
		{Protocol: "tcp", ContainerPort: 8080, HostPort: tcpPort, HostIP: "127.0.0.1"},
	}
	res, err := Setup(ctx, cfg, pn)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	var pc net.PacketConn
	inNS(t, res.NetNS, func() error {
		var err error
		pc, err = net.ListenPacket("udp", ":5353")
		return err
	})
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte("echo "), buf[:n]...), addr)
		}
	}()
	echoServer(t, res.NetNS, ":8080", "tcp")

	c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(udpPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	var got string
	for i := 0; i < 20 && got == ""; i++ { // UDP: retry lost datagrams
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		if n, err := c.Read(buf); err == nil {
			got = string(buf[:n])
		}
	}
	if got != "echo ping" {
		t.Fatalf("UDP published port answered %q", got)
	}
	tc, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpPort)), 5*time.Second)
	if err != nil {
		t.Fatalf("TCP port with host IP 127.0.0.1: %v", err)
	}
	if got := readConn(t, tc); got != "hello from tcp" {
		t.Fatalf("TCP published port answered %q", got)
	}
}

func freeUDPPort(t testing.TB) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}
