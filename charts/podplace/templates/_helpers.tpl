{{- define "podplace.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "podplace.labels" -}}
app.kubernetes.io/name: podplace
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "podplace.selector" -}}
app.kubernetes.io/name: podplace
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The election Lease's name: the --lease argument and the Role's
resourceNames must agree, so both take it from here.
*/}}
{{- define "podplace.leaseName" -}}
{{- include "podplace.fullname" . -}}
{{- end -}}

{{/*
REPOSITORY@DIGEST when image.digest is set (pinned: what runs is exactly
what was checked), else REPOSITORY:TAG.
*/}}
{{- define "podplace.image" -}}
{{- if .Values.image.digest -}}
{{- if not (regexMatch "^sha256:[a-f0-9]{64}$" .Values.image.digest) -}}
{{- fail (printf "image.digest %q is not a digest: expected sha256: and 64 hexadecimal digits" .Values.image.digest) -}}
{{- end -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
The webhook's Service, its serving certificate's Secret, and the DNS names
the certificate must carry (the API server calls SERVICE.NAMESPACE.svc).
*/}}
{{- define "podplace.webhookService" -}}
{{- printf "%s-webhook" (include "podplace.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "podplace.tlsSecret" -}}
{{- printf "%s-webhook-tls" (include "podplace.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "podplace.webhookDNSNames" -}}
{{- $svc := include "podplace.webhookService" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson -}}
{{- end -}}
