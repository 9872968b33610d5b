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

{{- define "pvx.image" -}}
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
- --metrics-bind-address=:{{ .Values.metricsPort }}
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
{{- range .Values.extraArgs }}
- {{ . | quote }}
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
