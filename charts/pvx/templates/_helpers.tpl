{{/*
Object names are fixed (pvx, pvx-manager, …), not derived from the release name: the CRDs and
ClusterRoles are cluster-wide, so one pvx runs per cluster, and config/default uses the same
names.
*/}}

{{/* Labels every object carries: the name pvx's manifests use, plus Helm's own bookkeeping. */}}
{{- define "pvx.labels" -}}
app.kubernetes.io/name: pvx
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The operator's pods: Deployment selector, PDB, Service, PodMonitor and topology spread. */}}
{{- define "pvx.selectorLabels" -}}
app.kubernetes.io/name: pvx
app.kubernetes.io/component: manager
{{- end }}

{{/* No image is published yet: without a repository the install stops here, saying what to do,
     instead of leaving pods in ImagePullBackOff. */}}
{{- define "pvx.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository is not set: no pvx image is published yet. Build it from the pvx repository's Dockerfile (docker build -t REGISTRY/pvx:TAG .), push it to a registry your nodes can pull from, and install with --set image.repository=REGISTRY/pvx --set image.tag=TAG (docs/install.md, \"The image\")" -}}
{{- end -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Where the kubelets' CA is in the container: kubelet.caFile, else the mounted kubelet.caConfigMap, else none (the cluster CA). */}}
{{- define "pvx.kubeletCaFile" -}}
{{- if and .Values.kubelet.caFile .Values.kubelet.caConfigMap }}
{{- fail "kubelet.caFile and kubelet.caConfigMap exclude each other: give one" }}
{{- end }}
{{- if and .Values.kubelet.insecureTLS (or .Values.kubelet.caFile .Values.kubelet.caConfigMap) }}
{{- fail "kubelet.insecureTLS turns off the check kubelet.caFile/caConfigMap configure: give one or the other" }}
{{- end }}
{{- if .Values.kubelet.caFile }}{{ .Values.kubelet.caFile }}{{ else if .Values.kubelet.caConfigMap }}/etc/pvx/kubelet-ca/ca.crt{{ end }}
{{- end }}

{{/* `pvx run`'s flags (src/cli/run.ts), in the order config/manager/deployment.yaml lists them. */}}
{{- define "pvx.args" -}}
- run
- --metrics-bind-address=:{{ .Values.metrics.port }}
{{- if not .Values.metrics.secure }}
- --metrics-secure=false
{{- end }}
{{- if .Values.metrics.certSecretName }}
- --metrics-cert-dir={{ include "pvx.metricsCertDir" . }}
{{- end }}
- --health-probe-bind-address=:{{ .Values.healthProbePort }}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- if .Values.leaderElection.enabled }}
- --leader-election-id={{ .Values.leaderElection.leaseName }}
{{- end }}
- --usage-source={{ .Values.usageSource }}
{{- if eq .Values.usageSource "kubelet" }}
{{- with include "pvx.kubeletCaFile" . }}
- --kubelet-ca-file={{ . }}
{{- end }}
{{- if .Values.kubelet.insecureTLS }}
- --kubelet-insecure-tls
{{- end }}
{{- with .Values.kubelet.preferredAddressTypes }}
- --kubelet-preferred-address-types={{ join "," . }}
{{- end }}
{{- end }}
{{- if eq .Values.usageSource "prometheus" }}
- --prometheus-url={{ required "usageSource prometheus needs prometheus.url" .Values.prometheus.url }}
{{- with .Values.prometheus.matchers }}
- {{ printf "--prometheus-matchers=%s" . | quote }}
{{- end }}
{{- end }}
- --policy-interval={{ .Values.policyInterval }}
- --audit-interval={{ .Values.audit.interval }}
- --audit-stuck-after={{ .Values.audit.stuckAfter }}
- --log-level={{ .Values.logLevel }}
{{- range .Values.modificationBudgets }}
- {{ printf "--modification-budget=%s" . | quote }}
{{- end }}
{{- range .Values.maxVolumeSizes }}
- {{ printf "--max-volume-size=%s" . | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* The name of the metrics port: https (token-reviewed, the default) or http (metrics.secure=false). */}}
{{- define "pvx.metricsPortName" -}}
{{ ternary "https" "http" .Values.metrics.secure }}
{{- end }}

{{/* Where metrics.certSecretName is mounted (kubebuilder's path). */}}
{{- define "pvx.metricsCertDir" -}}
/tmp/k8s-metrics-server/metrics-certs
{{- end }}

{{/* How a ServiceMonitor or PodMonitor endpoint reaches /metrics: HTTPS with a bearer token (given as `auth`), or plain HTTP. */}}
{{- define "pvx.scrapeSecurity" -}}
{{- if .root.Values.metrics.secure -}}
scheme: https
{{ .auth }}
tlsConfig:
  insecureSkipVerify: {{ .root.Values.metrics.scrapeTLS.insecureSkipVerify }}
  {{- with .root.Values.metrics.scrapeTLS.ca }}
  ca:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .root.Values.metrics.scrapeTLS.serverName }}
  serverName: {{ . }}
  {{- end }}
{{- else -}}
scheme: http
{{- end }}
{{- end }}

{{/* A NetworkPolicy egress rule's destinations, the CIDRs given (a rule without any reaches every address). */}}
{{- define "pvx.networkPolicyTo" -}}
to:
  {{- range . }}
  - ipBlock:
      cidr: {{ . }}
  {{- end }}
{{- end }}

{{/*
An opt-in's binding of its ClusterRole to pvx: cluster-wide, or, given namespaces, a RoleBinding
to the ClusterRole in each of them (the opt-in's power there and nowhere else).
*/}}
{{- define "pvx.optInBinding" -}}
{{- $root := .root -}}
{{- $role := .role -}}
{{- if .namespaces }}
{{- range .namespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $role }}
  namespace: {{ . }}
  labels:
    {{- include "pvx.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $role }}
subjects:
  - kind: ServiceAccount
    name: pvx
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- else }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $role }}
  labels:
    {{- include "pvx.labels" $root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $role }}
subjects:
  - kind: ServiceAccount
    name: pvx
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}
