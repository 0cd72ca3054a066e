package kubeletsvc

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Every CRI stop signal is accepted and reported back as itself, except
// the aliases (SIGCLD, SIGIOT, SIGPOLL) reported as the signal they name.
func TestStopSignalRoundTrip(t *testing.T) {
	aliases := map[runtimeapi.Signal]runtimeapi.Signal{
		runtimeapi.Signal_SIGNAL_SIGCLD:          runtimeapi.Signal_SIGNAL_SIGCHLD,
		runtimeapi.Signal_SIGNAL_SIGIOT:          runtimeapi.Signal_SIGNAL_SIGABRT,
		runtimeapi.Signal_SIGNAL_SIGPOLL:         runtimeapi.Signal_SIGNAL_SIGIO,
		runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT: runtimeapi.Signal_SIGNAL_SIGTERM,
	}
	for v := range runtimeapi.Signal_name {
		sig := runtimeapi.Signal(v)
		opt, err := stopSignalOption(sig)
		if err != nil {
			t.Errorf("stopSignalOption(%v): %v", sig, err)
			continue
		}
		want := sig
		if a, ok := aliases[sig]; ok {
			want = a
		}
		if got := criStopSignal(opt); got != want {
			t.Errorf("%v -> %q -> %v, want %v", sig, opt, got, want)
		}
	}
	for in, want := range map[runtimeapi.Signal]string{
		runtimeapi.Signal_SIGNAL_SIGQUIT:         "SIGQUIT",
		runtimeapi.Signal_SIGNAL_SIGRTMIN:        "34",
		runtimeapi.Signal_SIGNAL_SIGRTMINPLUS15:  "49",
		runtimeapi.Signal_SIGNAL_SIGRTMAXMINUS14: "50",
		runtimeapi.Signal_SIGNAL_SIGRTMAX:        "64",
	} {
		if got, _ := stopSignalOption(in); got != want {
			t.Errorf("stopSignalOption(%v) = %q, want %q", in, got, want)
		}
	}
	if _, err := stopSignalOption(runtimeapi.Signal(999)); err == nil {
		t.Error("an unknown signal number was accepted")
	}
}
