// Package tarxtest makes layers for tests of the code that reads them.
package tarxtest

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
)

// ZstdZeros is a zstd frame whose header declares a window of 2^windowLog
// bytes (10-41), of a tar holding one file, "zeros", of size zero bytes:
// RLE blocks, 4 bytes per 128 KiB, so a few KB declare and fill a 128 MiB
// window, or unpack to a file of any size.
func ZstdZeros(windowLog byte, size int64) []byte {
	var hdr bytes.Buffer
	if err := tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "zeros", Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
		panic(err) // a valid header: cannot fail
	}
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (windowLog - 10) << 3}
	block := func(last bool, typ, n uint32) {
		v := n<<3 | typ<<1
		if last {
			v |= 1
		}
		out = binary.LittleEndian.AppendUint32(out, v)[:len(out)+3]
	}
	block(false, 0, 512) // raw: the tar header
	out = append(out, hdr.Bytes()[:512]...)
	pad := (512 - size%512) % 512
	for rest := size + pad + 1024; rest > 0; { // RLE: the file, its padding, the end marker
		n := min(rest, 128<<10)
		rest -= n
		block(rest == 0, 1, uint32(n))
		out = append(out, 0)
	}
	return out
}
