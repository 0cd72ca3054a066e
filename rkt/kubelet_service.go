package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rkt/rkt/kubeletsvc"
	"github.com/rkt/rkt/pkg/buildinfo"
)

// kubeletServiceFlags are the options of `rkt kubelet-service`.
type kubeletServiceFlags struct {
	socket          string
	socketGroup     string
	streamAddr      string
	stage1Path      string
	criu            string
	restore         bool
	cgroupParent    string
	cniConfDir      string
	cniPluginDirs   []string
	logLevel        string
	shutdownTimeout time.Duration
	repairInterval  time.Duration
	runtimeHandlers []string
}

func init() {
	addCommand("kubelet-service", kubeletServiceCmd)
}

func kubeletServiceCmd() *cobra.Command {
	var f kubeletServiceFlags
	cmd := &cobra.Command{
		Use:   "kubelet-service",
		Short: "Serve the Kubernetes CRI (RuntimeService and ImageService) on a unix socket",
		Long: `Serve the Kubernetes Container Runtime Interface v1 for the kubelet.

The socket is taken from systemd socket activation when present, otherwise
created at --socket with mode 0660, owner root and group --socket-group.
SIGTERM or SIGINT stop the service; pods keep running, and a restarted
service finds them again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runKubeletService(cmd.Context(), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.socket, "socket", buildinfo.SocketPath, "unix socket to listen on (when not socket-activated)")
	fl.StringVar(&f.socketGroup, "socket-group", buildinfo.SocketGroup, "group allowed to use the socket besides root")
	fl.StringVar(&f.streamAddr, "stream-address", "127.0.0.1:0", "address of the exec/attach/port-forward streaming server")
	fl.StringVar(&f.stage1Path, "stage1-path", "", "stage1 binary (default: next to rkt, else "+buildinfo.Stage1Path+")")
	fl.StringVar(&f.criu, "criu", "criu", "criu binary (3.15 or later) that CheckpointPod runs: a path, or a name looked up in PATH")
	fl.BoolVar(&f.restore, "checkpoint-restore", false, "allow restores from checkpoints (RestorePod, a container from a checkpoint archive or image): criu restores the credentials and capabilities a checkpoint says, as root, so only where whoever names a pod's image is trusted with root")
	fl.StringVar(&f.cgroupParent, "cgroup-parent", "", "cgroup parent of the pods (default: stage0's)")
	fl.StringVar(&f.cniConfDir, "cni-conf-dir", buildinfo.CNIConfDir, "directory of CNI network configurations for pods")
	fl.StringSliceVar(&f.cniPluginDirs, "cni-bin-dir", buildinfo.PluginDirs(), "CNI plugin directories")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight calls may take to finish on SIGTERM")
	fl.StringSliceVar(&f.runtimeHandlers, "runtime-handler", nil, "extra runtime handler names (RuntimeClass handlers) run like the default one")
	fl.DurationVar(&f.repairInterval, "repair-interval", kubeletsvc.DefaultRepairInterval, "how often to collect, besides at start, what crashes left: aborted pod creations, content of failed pulls")
	return cmd
}

func runKubeletService(ctx context.Context, f *kubeletServiceFlags) error {
	level, err := parseLogLevel(f.logLevel)
	if err != nil {
		return err
	}
	if globals.Debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	logLegacy(logger)
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	srv, err := kubeletsvc.New(kubeletsvc.Config{
		DataDir:           globals.Dir,
		SocketPath:        f.socket,
		SocketGroup:       f.socketGroup,
		StreamAddr:        f.streamAddr,
		Stage1Path:        f.stage1Path, // empty: stage0.DefaultStage1Path()
		Criu:              f.criu,
		CheckpointRestore: f.restore,
		CgroupParent:      f.cgroupParent,
		CNIConfDir:        f.cniConfDir,
		CNIPluginDirs:     f.cniPluginDirs,
		ConfigDirs:        []string{globals.SystemConfig, globals.LocalConfig, globals.UserConfig},
		InsecureHTTP:      insecure("http"),
		ShutdownTimeout:   f.shutdownTimeout,
		RepairInterval:    f.repairInterval,
		RuntimeHandlers:   f.runtimeHandlers,
		Logger:            logger,
	})
	if err != nil {
		return err
	}
	return srv.Serve(ctx)
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
