package testutil

import (
	"fmt"
	"strconv"
)

// rawHeader is a ustar header block (GNU magic if gnu) for a file of size.
func rawHeader(name string, typ byte, size int64, gnu bool) []byte {
	h := make([]byte, 512)
	copy(h, name)
	for i, v := range map[int]int64{100: 0o644, 108: 0, 116: 0, 136: 0} {
		copy(h[i:i+8], fmt.Sprintf("%07o\x00", v))
	}
	copy(h[124:136], fmt.Sprintf("%011o\x00", size))
	h[156] = typ
	copy(h[257:265], "ustar\x0000")
	if gnu {
		copy(h[257:265], "ustar  \x00")
	}
	return h
}

// checksum sets the checksum of header block h and returns it.
func checksum(h []byte) []byte {
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

func pad512(b []byte) []byte { return append(b, make([]byte, (512-len(b)%512)%512)...) }

func paxRecord(k, v string) string {
	s := " " + k + "=" + v + "\n"
	n := len(s) + 1
	for len(strconv.Itoa(n))+len(s) != n {
		n = len(strconv.Itoa(n)) + len(s)
	}
	return strconv.Itoa(n) + s
}

// SparseTars returns two tars of one sparse file, name, each a few KiB
// declaring realSize bytes: "pax" (PAX, GNU 1.0 format) and "gnu" (old GNU).
func SparseTars(name string, realSize int64) map[string][]byte {
	recs := paxRecord("GNU.sparse.major", "1") + paxRecord("GNU.sparse.minor", "0") +
		paxRecord("GNU.sparse.name", name) + paxRecord("GNU.sparse.realsize", strconv.FormatInt(realSize, 10))
	body := append(pad512([]byte(fmt.Sprintf("1\n%d\n1\n", realSize-1))), 'x')
	pax := checksum(rawHeader("PaxHeaders/x", 'x', int64(len(recs)), false))
	pax = append(pax, pad512([]byte(recs))...)
	pax = append(pax, checksum(rawHeader("GNUSparseFile.0/x", '0', int64(len(body)), false))...)
	pax = append(pax, pad512(body)...)

	gh := rawHeader(name, 'S', 1, true)
	copy(gh[386:398], fmt.Sprintf("%011o\x00", realSize-1)) // sparse[0].offset
	copy(gh[398:410], fmt.Sprintf("%011o\x00", 1))          // sparse[0].numbytes
	copy(gh[483:495], fmt.Sprintf("%011o\x00", realSize))   // realsize
	gnu := append(checksum(gh), pad512([]byte("x"))...)
	end := make([]byte, 1024)
	return map[string][]byte{"pax": append(pax, end...), "gnu": append(gnu, end...)}
}
