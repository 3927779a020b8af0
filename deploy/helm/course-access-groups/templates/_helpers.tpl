{{- define "cag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped names, so two releases (or one per namespace) never collide. */}}
{{- define "cag.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "cag.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "cag.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cag.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "cag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: course-access-groups
{{- end -}}

{{/* Selector labels of one role: (dict "ctx" . "role" "api"). */}}
{{- define "cag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cag.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "cag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cag.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "cag.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "cag.secretName" -}}
{{- .Values.existingSecret.name | default (include "cag.fullname" .) -}}
{{- end -}}

{{/*
Refuses values the service would refuse at start-up (it exits 2), at render time instead, with
the same message: exactly one JWT key source, and the settings without a default.
*/}}
{{- define "cag.validate" -}}
{{- $sources := list -}}
{{- if .Values.auth.jwtSecret }}{{ $sources = append $sources "auth.jwtSecret" }}{{ end -}}
{{- if .Values.auth.jwtPublicKey }}{{ $sources = append $sources "auth.jwtPublicKey" }}{{ end -}}
{{- if .Values.auth.jwksUrl }}{{ $sources = append $sources "auth.jwksUrl" }}{{ end -}}
{{- if .Values.existingSecret.jwtKey }}{{ $sources = append $sources "existingSecret.jwtKey" }}{{ end -}}
{{- if ne (len $sources) 1 -}}
{{- fail (printf "set exactly one JWT key source: auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey (%s)" (ternary "none is set" (printf "%s are set" (join ", " $sources)) (eq (len $sources) 0))) -}}
{{- end -}}
{{- if .Values.existingSecret.name -}}
{{- if or .Values.auth.jwtSecret .Values.auth.jwtPublicKey .Values.secrets.mongoUrl .Values.secrets.schemaRegistryUsername .Values.secrets.schemaRegistryPassword -}}
{{- fail "existingSecret.name is set: put MONGO_URL, the JWT key and the registry credentials in that Secret, not in auth.jwtSecret, auth.jwtPublicKey or secrets.*" -}}
{{- end -}}
{{- else -}}
{{- if .Values.existingSecret.jwtKey -}}
{{- fail "existingSecret.jwtKey names a key of existingSecret.name, which is not set" -}}
{{- end -}}
{{- if not .Values.secrets.mongoUrl -}}
{{- fail "secrets.mongoUrl is required (or existingSecret.name, a Secret holding MONGO_URL)" -}}
{{- end -}}
{{- end -}}
{{- if not .Values.config.kafkaBrokers -}}
{{- fail "config.kafkaBrokers is required (host:port[,host:port...])" -}}
{{- end -}}
{{- if not (or .Values.api.enabled .Values.consumer.enabled) -}}
{{- fail "api.enabled and consumer.enabled are both false: nothing to deploy" -}}
{{- end -}}
{{- end -}}
