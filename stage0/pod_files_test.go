package stage0

import (
	"testing"

	"github.com/rkt/rkt/networking"
	"github.com/rkt/rkt/pkg/schema"
)

func TestResolvConf(t *testing.T) {
	nr := &networking.Result{Networks: []networking.NetworkResult{{DNS: schema.DNS{Servers: []string{"10.0.0.2"}, Searches: []string{"cni.local"}}}}}
	got, err := resolvConf(&schema.DNS{Servers: []string{"1.1.1.1", "8.8.8.8"}, Searches: []string{"a.org", "b.org"}, Options: []string{"ndots:5"}}, nr, false)
	if want := "nameserver 1.1.1.1\nnameserver 8.8.8.8\nsearch a.org b.org\noptions ndots:5\n"; err != nil || got != want {
		t.Errorf("explicit DNS: %q, %v", got, err)
	}
	got, _ = resolvConf(nil, nr, false)
	if want := "nameserver 10.0.0.2\nsearch cni.local\n"; got != want {
		t.Errorf("CNI DNS: %q", got)
	}
	for conf, want := range map[string]bool{
		"nameserver 127.0.0.53\noptions edns0\n":    true,
		"nameserver 127.0.0.1\nnameserver ::1\n":    true,
		"nameserver 127.0.0.53\nnameserver 9.9.9.9": false,
		"search x\n": false,
	} {
		if got := onlyLoopbackServers(conf); got != want {
			t.Errorf("onlyLoopbackServers(%q) = %v", conf, got)
		}
	}
}
