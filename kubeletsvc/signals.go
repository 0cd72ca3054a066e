package kubeletsvc

import (
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rkt/rkt/stage0"
)

// Real-time signal numbers as the CRI's enum counts them (SIGRTMIN = 34).
const (
	sigRTMin = 34
	sigRTMax = 64
)

// stopSignalOption converts a CRI stop signal to stage0's form: "" for the
// runtime default (the image's STOPSIGNAL, else SIGTERM), else a name such
// as "SIGQUIT" or a real-time signal number.
func stopSignalOption(sig runtimeapi.Signal) (string, error) {
	if sig == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		return "", nil
	}
	name, ok := runtimeapi.Signal_name[int32(sig)]
	if !ok {
		return "", invalidf("unknown stop signal %d", sig)
	}
	name = strings.TrimPrefix(name, "SIGNAL_")
	name = strings.Replace(name, "PLUS", "+", 1)
	name = strings.Replace(name, "MINUS", "-", 1)
	s, err := stage0.NormalizeSignal(name)
	if err != nil {
		return "", invalidf("stop signal %v: %v", sig, err)
	}
	return s, nil
}

// criStopSignal converts the app's stop signal (stage0's form, "" for
// SIGTERM) to the CRI enum.
func criStopSignal(s string) runtimeapi.Signal {
	if s == "" {
		return runtimeapi.Signal_SIGNAL_SIGTERM
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		if v, ok := runtimeapi.Signal_value["SIGNAL_"+s]; ok {
			return runtimeapi.Signal(v)
		}
		return runtimeapi.Signal_SIGNAL_SIGTERM
	}
	var name string
	switch {
	case n == sigRTMin:
		name = "SIGRTMIN"
	case n > sigRTMin && n < sigRTMax-14:
		name = "SIGRTMINPLUS" + strconv.Itoa(n-sigRTMin)
	case n >= sigRTMax-14 && n < sigRTMax:
		name = "SIGRTMAXMINUS" + strconv.Itoa(sigRTMax-n)
	case n == sigRTMax:
		name = "SIGRTMAX"
	}
	if v, ok := runtimeapi.Signal_value["SIGNAL_"+name]; ok {
		return runtimeapi.Signal(v)
	}
	return runtimeapi.Signal_SIGNAL_SIGTERM
}
