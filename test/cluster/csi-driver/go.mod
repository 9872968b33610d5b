// pvx-csi: the embedded cluster's CSI driver (controller + node + kubelet plugin registration).
module pvx.dev/test/cluster/csi-driver

go 1.25.0

require (
	github.com/container-storage-interface/spec v1.13.0
	golang.org/x/sys v0.45.0
	google.golang.org/grpc v1.79.3
	k8s.io/apimachinery v0.34.4
	k8s.io/kubelet v0.34.4
)

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/net v0.55.0 // indirect
	golang.org/x/text v0.37.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251202230838-ff82c1b0f217 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	sigs.k8s.io/json v0.0.0-20241014173422-cfa47c3a1cc8 // indirect
)
