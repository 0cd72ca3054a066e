package kubeletsvc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/peer"
)

func TestParseStatusGroups(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"Name:\tx\nGroups:\t4 24 1000 \nNStgid:\t1\n", []int{4, 24, 1000}, false},
		{"Groups:\n", nil, false},
		{"Name:\tx\n", nil, true},
		{"Groups:\t4 x\n", nil, true},
	}
	for _, tc := range tests {
		got, err := parseStatusGroups(strings.NewReader(tc.in))
		if (err != nil) != tc.wantErr {
			t.Fatalf("parseStatusGroups(%q) err = %v, wantErr %v", tc.in, err, tc.wantErr)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("parseStatusGroups(%q) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("parseStatusGroups(%q) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

func TestAuthorizerCheck(t *testing.T) {
	a := &authorizer{gid: 500, groupsOf: func(pid int32) ([]int, error) {
		switch pid {
		case 1:
			return []int{10, 500}, nil
		case 2:
			return []int{10}, nil
		}
		return nil, errors.New("no such process")
	}}
	tests := []struct {
		name string
		cred *unix.Ucred
		ok   bool
	}{
		{"root", &unix.Ucred{Pid: 9, Uid: 0, Gid: 0}, true},
		{"primary group", &unix.Ucred{Pid: 9, Uid: 1000, Gid: 500}, true},
		{"supplementary group", &unix.Ucred{Pid: 1, Uid: 1000, Gid: 1000}, true},
		{"outsider", &unix.Ucred{Pid: 2, Uid: 1000, Gid: 1000}, false},
		{"vanished peer", &unix.Ucred{Pid: 3, Uid: 1000, Gid: 1000}, false},
		{"no cred", nil, false},
	}
	for _, tc := range tests {
		ctx := peer.NewContext(context.Background(), &peer.Peer{
			Addr:     &net.UnixAddr{Name: "@", Net: "unix"},
			AuthInfo: peerCredInfo{ucred: tc.cred},
		})
		err := a.check(ctx)
		if (err == nil) != tc.ok {
			t.Errorf("%s: check = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errPermission) {
			t.Errorf("%s: error %v is not errPermission", tc.name, err)
		}
	}
}
