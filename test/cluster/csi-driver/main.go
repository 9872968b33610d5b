// Command pvx-csi is the CSI driver of pvx's embedded test cluster.
//
// It plays the part csi-driver-host-path plays in upstream CI (that module and node-driver-registrar
// are not served by our module proxy), and goes one step further where pvx needs it:
//
//   - backing "dir" (default): a volume is a directory under --state-dir, bind-mounted into pods.
//     Like hostpath, its usage statistics are those of the filesystem holding the state dir, so
//     they do not follow the PVC — the situation pvx must recognise on hostpath/local-path drivers.
//   - backing "xfs": a volume is a sparse file formatted XFS and attached to a loop device.
//     ControllerExpandVolume grows the file, NodeExpandVolume refreshes the loop device and runs
//     xfs_growfs online, so used bytes, inodes and capacity reported by the kubelet are the
//     volume's own. (Online ext4 grow needs CAP_SYS_RESOURCE, which our VMs lack; XFS does not.)
//   - node only (--volume-images=DIR): the node half of another driver whose controller is real
//     code (the AWS EBS driver, with EC2 emulated by test/cluster/ec2). Volumes are the image
//     files that controller's cloud keeps at DIR/<volume-id>.img — the emulated EBS volumes; the
//     first publish formats one XFS (as the EBS node plugin formats a new volume at stage), and
//     NodeExpandVolume grows the filesystem to the image's size after a ModifyVolume grew it.
//
// StorageClass parameters: backing=dir|xfs, nodeExpansion=required (default) | none (the
// controller's expansion is the whole of it) | offline (the filesystem grows only when the volume is
// mounted anew: NodeExpandVolume on a volume in use answers FailedPrecondition, as a driver without
// online filesystem growth does, and the kubelet waits for the next mount),
// maxVolumeSize=<quantity> (a larger create or expand
// fails with OutOfRange, which Kubernetes reports as ControllerResizeInfeasible), and
// hiddenMaxVolumeSize, the same limit under a name pvx's driver profile does not read.
// Fault injection for tests: while the file <state-dir>/faults/controller-expand exists, every
// ControllerExpandVolume fails with gRPC Internal and the file's text as message (the way the AWS
// EBS driver reports VolumeModificationRateExceeded).
//
// The driver also serves the kubelet plugin-registration API itself, so no node-driver-registrar
// process is needed: kubelet discovers the socket in <kubelet-root>/plugins_registry.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/api/resource"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const version = "0.1.0"

type config struct {
	driverName         string
	nodeID             string
	endpoint           string
	registrationSocket string
	stateDir           string
	maxVolumeSize      int64
	// volumeImages: node-only mode, volumes are DIR/<volume-id>.img made by another controller.
	volumeImages string
	// topology: the segments NodeGetInfo reports (the kubelet labels the Node with them).
	topology map[string]string
}

func main() {
	cfg := config{}
	var maxSize string
	flag.StringVar(&cfg.driverName, "driver-name", "hostpath.pvx.dev", "CSI driver name (the StorageClass provisioner)")
	flag.StringVar(&cfg.nodeID, "node-id", "", "node ID reported by NodeGetInfo (the kubelet's node name)")
	flag.StringVar(&cfg.endpoint, "endpoint", "", "path of the CSI unix socket")
	flag.StringVar(&cfg.registrationSocket, "registration-socket", "", "path of the kubelet plugin-registration socket (empty: do not register)")
	flag.StringVar(&cfg.stateDir, "state-dir", "/var/lib/pvx-csi", "where volumes and their metadata live")
	flag.StringVar(&cfg.volumeImages, "volume-images", "", "serve only the node service, for volumes that are image files DIR/<volume-id>.img made by another driver's controller")
	flag.Func("topology", "a topology segment KEY=VALUE NodeGetInfo reports (repeatable)", func(v string) error {
		key, value, ok := strings.Cut(v, "=")
		if !ok || key == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		if cfg.topology == nil {
			cfg.topology = map[string]string{}
		}
		cfg.topology[key] = value
		return nil
	})
	flag.StringVar(&maxSize, "max-volume-size", "", "largest volume this driver creates or expands to, for every class (empty: no limit)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)

	if cfg.nodeID == "" || cfg.endpoint == "" {
		log.Fatal("--node-id and --endpoint are required")
	}
	if maxSize != "" {
		q, err := resource.ParseQuantity(maxSize)
		if err != nil {
			log.Fatalf("--max-volume-size=%q: %v", maxSize, err)
		}
		cfg.maxVolumeSize = q.Value()
	}
	store, err := openStore(cfg.stateDir)
	if err != nil {
		log.Fatalf("state dir %s: %v", cfg.stateDir, err)
	}
	d := &driver{cfg: cfg, store: store}

	csiServer := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(csiServer, d)
	if !d.nodeOnly() {
		csi.RegisterControllerServer(csiServer, d)
	}
	csi.RegisterNodeServer(csiServer, d)
	csiListener := listenUnix(cfg.endpoint)
	go serve(csiServer, csiListener, "CSI")

	var regServer *grpc.Server
	if cfg.registrationSocket != "" {
		regServer = grpc.NewServer()
		registerapi.RegisterRegistrationServer(regServer, &registration{driverName: cfg.driverName, endpoint: cfg.endpoint})
		go serve(regServer, listenUnix(cfg.registrationSocket), "registration")
	}
	log.Printf("pvx-csi %s: driver %s on node %s, CSI socket %s, state %s", version, cfg.driverName, cfg.nodeID, cfg.endpoint, cfg.stateDir)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	sig := <-signals
	log.Printf("received %s, stopping", sig)
	if regServer != nil {
		// Remove the registration socket first so the kubelet unregisters the plugin.
		regServer.Stop()
		_ = os.Remove(cfg.registrationSocket)
	}
	csiServer.GracefulStop()
	_ = os.Remove(cfg.endpoint)
}

func listenUnix(path string) net.Listener {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		log.Fatalf("socket dir for %s: %v", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		log.Fatalf("removing stale socket %s: %v", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		log.Fatalf("listen on %s: %v", path, err)
	}
	return l
}

func serve(s *grpc.Server, l net.Listener, what string) {
	if err := s.Serve(l); err != nil {
		log.Fatalf("%s server: %v", what, err)
	}
}

func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s(%v) -> error: %v", info.FullMethod, compact(req), err)
	} else if info.FullMethod != "/csi.v1.Identity/Probe" && info.FullMethod != "/csi.v1.Node/NodeGetVolumeStats" {
		log.Printf("%s(%v) -> %v", info.FullMethod, compact(req), compact(resp))
	}
	return resp, err
}

func compact(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%+v", v)
}

// registration answers the kubelet's plugin watcher (the node-driver-registrar protocol).
type registration struct {
	registerapi.UnimplementedRegistrationServer
	driverName string
	endpoint   string
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driverName,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		log.Printf("kubelet registered driver %s", r.driverName)
	} else {
		log.Printf("kubelet refused driver %s: %s", r.driverName, s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
