package main

import "testing"

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
