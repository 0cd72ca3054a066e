package main

import (
	"strings"
	"testing"
)

// TestDNSHostWithOtherDNSFlags: --dns=host copies the host's resolv.conf,
// so --dns-search and --dns-opt given with it cannot be honoured: they are
// refused (as rkt 1.x did), not dropped without a word.
func TestDNSHostWithOtherDNSFlags(t *testing.T) {
	for _, f := range []podFlags{
		{net: "default", dns: []string{"host"}, dnsSearch: []string{"example.com"}},
		{net: "default", dns: []string{"host"}, dnsOpt: []string{"ndots:2"}},
		{net: "default", dns: []string{"host", "8.8.8.8"}},
	} {
		o, _, err := f.podOptions()
		if err == nil {
			t.Errorf("--dns=%v --dns-search=%v --dns-opt=%v accepted as DNS %+v", f.dns, f.dnsSearch, f.dnsOpt, o.DNS)
		}
	}
	f := podFlags{net: "default", dns: []string{"host"}}
	if o, _, err := f.podOptions(); err != nil || o.DNS != nil {
		t.Errorf("--dns=host: %+v, %v", o.DNS, err)
	}
}

// A pod-level --set-env is checked as an app's is: KEY=VALUE.
func TestPodEnvChecked(t *testing.T) {
	var f appFlags
	if _, err := f.appOptions("busybox", []string{"FOO"}, nil); err == nil || !strings.Contains(err.Error(), "invalid --set-env") {
		t.Errorf("pod-level --set-env=FOO: %v, want invalid --set-env", err)
	}
	if _, err := f.appOptions("busybox", []string{"FOO=1"}, nil); err != nil {
		t.Errorf("pod-level --set-env=FOO=1: %v", err)
	}
}
