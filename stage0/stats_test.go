package stage0

import (
	"reflect"
	"testing"
)

func TestParseNetDev(t *testing.T) {
	in := `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  eth0: 1234567    8901    1    2    0     0          0         0   765432     4321    3    4    0     0       0          0
 short: 1 2 3
`
	got := parseNetDev([]byte(in))
	want := []InterfaceStats{{Name: "eth0", RxBytes: 1234567, RxPackets: 8901, RxErrors: 1, RxDropped: 2,
		TxBytes: 765432, TxPackets: 4321, TxErrors: 3, TxDropped: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseNetDev = %+v, want %+v", got, want)
	}
}
