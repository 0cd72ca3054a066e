package control

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame types of the exec/attach stream.
const (
	FrameStdin      byte = 0 // client -> server: stdin data
	FrameStdout     byte = 1 // server -> client: stdout data (the tty's output with a tty)
	FrameStderr     byte = 2 // server -> client: stderr data
	FrameResize     byte = 3 // client -> server: JSON TermSize
	FrameStdinClose byte = 4 // client -> server: stdin reached EOF
	FrameExit       byte = 5 // server -> client: JSON ExitResult, last frame
)

// maxFrame bounds a frame's payload so a corrupt peer cannot make us allocate
// without limit.
const maxFrame = 1 << 20

// FrameWriter writes frames; it is safe for concurrent use.
type FrameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewFrameWriter returns a FrameWriter on w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// WriteFrame writes one frame of type typ.
func (fw *FrameWriter) WriteFrame(typ byte, payload []byte) error {
	for len(payload) > maxFrame {
		if err := fw.WriteFrame(typ, payload[:maxFrame]); err != nil {
			return err
		}
		payload = payload[maxFrame:]
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if _, err := fw.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("cannot write frame header: %w", err)
	}
	if len(payload) > 0 {
		if _, err := fw.w.Write(payload); err != nil {
			return fmt.Errorf("cannot write frame payload: %w", err)
		}
	}
	return nil
}

// StreamWriter returns an io.Writer that sends each Write as one frame of
// type typ.
func (fw *FrameWriter) StreamWriter(typ byte) io.Writer {
	return frameStream{fw: fw, typ: typ}
}

type frameStream struct {
	fw  *FrameWriter
	typ byte
}

func (s frameStream) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.fw.WriteFrame(s.typ, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// maxMessage bounds a JSON request or response line. The largest are exec
// requests (bounded by the kernel's ARG_MAX, 2 MiB by default, when run)
// and status answers.
const maxMessage = 16 << 20

// ErrMessageTooLong: a request or response line exceeds the limit.
var ErrMessageTooLong = errors.New("control message too long")

// ReadMessage reads one newline-terminated JSON message into v, refusing
// lines over maxMessage bytes without buffering them whole.
func ReadMessage(br *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxMessage {
			return fmt.Errorf("%w: over %d bytes", ErrMessageTooLong, maxMessage)
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return fmt.Errorf("truncated message: %w", io.ErrUnexpectedEOF)
			}
			return err
		}
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("cannot parse message: %w", err)
	}
	return nil
}

// ReadFrame reads one frame. It returns io.EOF only at a frame boundary.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("truncated frame header: %w", err)
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the %d limit", n, maxFrame)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("truncated frame payload: %w", err)
	}
	return hdr[0], payload, nil
}
