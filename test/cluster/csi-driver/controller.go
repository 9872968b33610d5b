package main

import (
	"context"
	"os"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/api/resource"
)

const defaultVolumeBytes = 1 << 30

type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	cfg   config
	store *store
	// One lock for every volume operation: the cluster is small, and serialising keeps loop
	// device attach/detach and metadata writes free of races.
	mu sync.Mutex
}

// Identity

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.cfg.driverName, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []*csi.PluginCapability{
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}
	if !d.nodeOnly() {
		caps = append(caps, &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}})
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

// nodeOnly: this instance is the node half of a driver whose controller runs elsewhere.
func (d *driver) nodeOnly() bool { return d.cfg.volumeImages != "" }

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rpc := func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		rpc(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		rpc(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME),
	}}, nil
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume name is required")
	}
	for _, c := range req.GetVolumeCapabilities() {
		if c.GetBlock() != nil {
			return nil, status.Error(codes.InvalidArgument, "block volumes are not supported, only filesystem volumes")
		}
	}
	params := req.GetParameters()
	backing := params["backing"]
	if backing == "" {
		backing = backingDir
	}
	if backing != backingDir && backing != backingXFS {
		return nil, status.Errorf(codes.InvalidArgument, "parameter backing=%q: must be %q or %q", backing, backingDir, backingXFS)
	}
	controllerOnly, offline := false, false
	switch params["nodeExpansion"] {
	case "", "required":
	case "none":
		controllerOnly = true
	case "offline":
		offline = true
	default:
		return nil, status.Errorf(codes.InvalidArgument, "parameter nodeExpansion=%q: must be \"required\", \"none\" or \"offline\"", params["nodeExpansion"])
	}
	offlineController := false
	switch params["controllerExpansion"] {
	case "", "online":
	case "offline":
		offlineController = true
	default:
		return nil, status.Errorf(codes.InvalidArgument, "parameter controllerExpansion=%q: must be \"online\" or \"offline\"", params["controllerExpansion"])
	}
	maxBytes := d.cfg.maxVolumeSize
	// maxVolumeSize is a documented limit (pvx's driver profile reads it from the class);
	// hiddenMaxVolumeSize is one the driver enforces without telling anyone, like a backend quota.
	for _, key := range []string{"maxVolumeSize", "hiddenMaxVolumeSize"} {
		raw, ok := params[key]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(raw)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "parameter %s=%q: %v", key, raw, err)
		}
		if maxBytes == 0 || q.Value() < maxBytes {
			maxBytes = q.Value()
		}
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = defaultVolumeBytes
	}
	if backing == backingXFS && size < minXFSBytes {
		size = minXFSBytes
	}
	if limit := req.GetCapacityRange().GetLimitBytes(); limit > 0 && size > limit {
		return nil, status.Errorf(codes.OutOfRange, "size %d exceeds the requested limit %d", size, limit)
	}
	if maxBytes > 0 && size > maxBytes {
		return nil, status.Errorf(codes.OutOfRange, "requested size %d exceeds the maximum volume size %d", size, maxBytes)
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	id := volumeID(req.GetName())
	if existing, err := d.store.get(id); err == nil {
		if existing.CapacityBytes < size || existing.Backing != backing {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with %d bytes (%s), request asks %d (%s)", id, existing.CapacityBytes, existing.Backing, size, backing)
		}
		return createResponse(existing), nil
	}
	v := &volume{
		ID: id, Name: req.GetName(), Backing: backing, CapacityBytes: size, MaxBytes: maxBytes, ControllerOnly: controllerOnly,
		OfflineNodeExpansion: offline, FilesystemBytes: size, OfflineControllerExpansion: offlineController,
	}
	if err := d.createData(v); err != nil {
		_ = os.RemoveAll(d.store.dataPath(v))
		return nil, status.Errorf(codes.Internal, "creating %s: %v", id, err)
	}
	if err := d.store.put(v); err != nil {
		return nil, status.Errorf(codes.Internal, "recording %s: %v", id, err)
	}
	return createResponse(v), nil
}

func createResponse(v *volume) *csi.CreateVolumeResponse {
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes}}
}

func (d *driver) createData(v *volume) error {
	path := d.store.dataPath(v)
	if v.Backing == backingDir {
		return os.MkdirAll(path, 0o777)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	if err := f.Truncate(v.CapacityBytes); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return run("mkfs.xfs", "-q", path)
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.store.get(req.GetVolumeId())
	if err == errNotFound {
		return &csi.DeleteVolumeResponse{}, nil
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if v.Backing == backingXFS {
		if dev, _ := loopDeviceOf(d.store.dataPath(v)); dev != "" {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still attached to %s", v.ID, dev)
		}
	}
	if err := d.store.remove(v); err != nil {
		return nil, status.Errorf(codes.Internal, "deleting %s: %v", v.ID, err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if _, err := d.store.get(req.GetVolumeId()); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	for _, c := range req.GetVolumeCapabilities() {
		if c.GetBlock() != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: "block volumes are not supported"}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

// ControllerExpandVolume records the new size (and grows the XFS image file); the filesystem is
// grown by NodeExpandVolume on the node where the volume is mounted, unless the class said
// nodeExpansion: "none" (a directory needs no node step; the expansion ends here).
func (d *driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	if msg := d.store.fault("controller-expand"); msg != "" {
		return nil, status.Error(codes.Internal, msg)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.store.get(req.GetVolumeId())
	if err == errNotFound {
		return nil, status.Errorf(codes.NotFound, "volume %s not found", req.GetVolumeId())
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if v.MaxBytes > 0 && size > v.MaxBytes {
		return nil, status.Errorf(codes.OutOfRange, "requested size %d exceeds the maximum volume size %d", size, v.MaxBytes)
	}
	if size <= v.CapacityBytes {
		// Already that large (a retry, or a smaller request after recovery): nothing to do.
		return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.CapacityBytes, NodeExpansionRequired: !v.ControllerOnly}, nil
	}
	if v.OfflineControllerExpansion && len(v.PublishedTargets) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in use (published at %d targets): this class grows volumes only while no pod mounts them", v.ID, len(v.PublishedTargets))
	}
	if v.Backing == backingXFS {
		if err := os.Truncate(d.store.dataPath(v), size); err != nil {
			return nil, status.Errorf(codes.Internal, "growing image of %s: %v", v.ID, err)
		}
	}
	v.CapacityBytes = size
	if err := d.store.put(v); err != nil {
		return nil, status.Errorf(codes.Internal, "recording %s: %v", v.ID, err)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: !v.ControllerOnly}, nil
}
