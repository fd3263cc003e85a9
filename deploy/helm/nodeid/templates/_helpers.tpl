{{/* The chart's name. */}}
{{- define "nodeid.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's objects, at most 63 characters (less
the "-gossip" suffix of the headless Service). */}}
{{- define "nodeid.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 56 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 56 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 56 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nodeid.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodeid.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodeid.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodeid.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodeid.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodeid.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace of the Lease objects (store k8s). */}}
{{- define "nodeid.leaseNamespace" -}}
{{- default .Release.Namespace .Values.store.k8s.namespace }}
{{- end }}

{{/* The most pods the release runs outside a rollout. */}}
{{- define "nodeid.maxPods" -}}
{{- if .Values.autoscaling.enabled }}{{ .Values.autoscaling.maxReplicas }}{{ else }}{{ .Values.replicaCount }}{{ end }}
{{- end }}

{{/* Seconds the pod's stop needs, from its deletion to the broker's exit:
the application's preStop sleep and its stop (the native sidecar gets
SIGTERM only once the application has exited), then the broker's graceful
stop: the id file's grace (idSource file), the release (bounded by the
shutdown timeout), gossip's leave (2 s) and the HTTP drain. */}}
{{- define "nodeid.stopSeconds" -}}
{{- $b := .Values.broker }}
{{- $file := 0 }}
{{- if eq .Values.app.idSource "file" }}{{ $file = $b.idFileGraceSeconds }}{{ end }}
{{- add .Values.app.preStopSleepSeconds .Values.app.stopSeconds $file $b.shutdownTimeoutSeconds 2 $b.drainDelaySeconds }}
{{- end }}

{{/* terminationGracePeriodSeconds: the value, or what the stop needs plus 5 s. */}}
{{- define "nodeid.terminationGrace" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- add (include "nodeid.stopSeconds" . | atoi) 5 }}
{{- else }}
{{- .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/* The checks values.schema.json cannot make, because they compare two
values: each fails the render with what to change. */}}
{{- define "nodeid.validate" -}}
{{- $v := .Values }}
{{- $size := int $v.broker.clusterSize }}
{{- $max := include "nodeid.maxPods" . | atoi }}
{{- if gt $max $size }}
{{- fail (printf "the most pods (%d: autoscaling.maxReplicas, or replicaCount without autoscaling) exceed broker.clusterSize (%d): each pod holds a node ID, and one beyond the cluster size finds none and never starts" $max $size) }}
{{- end }}
{{- if and (eq (int $v.rollingUpdate.maxUnavailable) 0) (gt (add $max $v.rollingUpdate.maxSurge) $size) }}
{{- fail (printf "a rollout would never end: with rollingUpdate.maxUnavailable 0 it adds %d pods to %d before it removes any, beyond broker.clusterSize (%d): the new pods find no node ID; raise the cluster size, lower maxSurge or allow maxUnavailable" (int $v.rollingUpdate.maxSurge) $max $size) }}
{{- end }}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas exceeds autoscaling.maxReplicas" }}
{{- end }}
{{- if and $v.autoscaling.enabled (not (dig "requests" "cpu" "" $v.app.resources)) }}
{{- fail "autoscaling needs app.resources.requests.cpu: the HPA scales on the application's CPU, a share of its request" }}
{{- end }}
{{- $stop := include "nodeid.stopSeconds" . | atoi }}
{{- $grace := include "nodeid.terminationGrace" . | atoi }}
{{- if le $grace $stop }}
{{- fail (printf "terminationGracePeriodSeconds %d does not exceed the %d s the stop needs (preStop sleep, the application's stop, then the broker's id file grace, release, gossip leave and drain): the broker would be killed before it released its node ID" $grace $stop) }}
{{- end }}
{{- $live := mul $v.broker.livenessProbe.periodSeconds $v.broker.livenessProbe.failureThreshold }}
{{- if le (int $live) (int $v.broker.leaseDurationSeconds) }}
{{- fail (printf "broker.livenessProbe: periodSeconds x failureThreshold (%d s) must exceed the loss grace (the lease, %d s), or a broker in jeopardy is restarted when it could have recovered" (int $live) (int $v.broker.leaseDurationSeconds)) }}
{{- end }}
{{- if and (gt (int $v.app.preStopSleepSeconds) 0) (not (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version)) }}
{{- fail "app.preStopSleepSeconds needs the preStop sleep action (Kubernetes 1.30+): set it to 0 on 1.29" }}
{{- end }}
{{- if and $v.gossip.enabled (not $v.gossip.keySecret.name) }}
{{- fail "gossip.enabled needs gossip.keySecret.name: a Secret with base64 of 16, 24 or 32 random bytes (deploy/kubernetes.md), or set gossip.enabled false" }}
{{- end }}
{{- end }}
