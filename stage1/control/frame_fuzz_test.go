package control

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzReadFrame decodes arbitrary bytes as a frame stream: no panic, no
// payload over maxFrame, and frames written by FrameWriter read back.
func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	fw := NewFrameWriter(&buf)
	fw.WriteFrame(FrameStdout, []byte("hello"))
	fw.WriteFrame(FrameExit, []byte(`{"exitCode":3}`))
	f.Add(buf.Bytes())
	f.Add([]byte{FrameStdin, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{FrameResize, 0, 0, 0, 2, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			typ, payload, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(payload) > maxFrame {
				t.Fatalf("frame of %d bytes", len(payload))
			}
			var out bytes.Buffer
			if err := NewFrameWriter(&out).WriteFrame(typ, payload); err != nil {
				t.Fatal(err)
			}
			if out.Len() != 5+len(payload) || binary.BigEndian.Uint32(out.Bytes()[1:5]) != uint32(len(payload)) {
				t.Fatalf("frame does not round-trip")
			}
		}
	})
}

// FuzzReadMessage decodes arbitrary bytes as control requests and
// responses: no panic, no line over maxMessage accepted.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte(`{"op":"start","app":"a"}` + "\n"))
	f.Add([]byte(`{"op":"exec","app":"a","exec":{"args":["sh"],"env":["A=1"]}}` + "\n"))
	f.Add([]byte(`{"error":"x","code":"invalid","errno":28}` + "\n"))
	f.Add([]byte(`{"op":` + strings.Repeat("[", 10000)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req Request
		ReadMessage(bufio.NewReader(bytes.NewReader(data)), &req)
		var resp Response
		if ReadMessage(bufio.NewReader(bytes.NewReader(data)), &resp) == nil && resp.Code != "" {
			_ = responseError(&req, &resp)
		}
	})
}

func TestReadMessageLimit(t *testing.T) {
	line := append([]byte(`{"op":"`+strings.Repeat("x", maxMessage)+`"}`), '\n')
	var req Request
	if err := ReadMessage(bufio.NewReader(bytes.NewReader(line)), &req); err == nil {
		t.Fatal("a message over the limit was accepted")
	}
	if err := ReadMessage(bufio.NewReader(strings.NewReader(`{"op":"stop","app":"a"}`+"\n")), &req); err != nil || req.Op != "stop" {
		t.Fatalf("ReadMessage = %+v, %v", req, err)
	}
}
