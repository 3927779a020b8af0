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
{{- if not .Values.image.repository -}}
{{- $v := .Values.image.tag | default .Chart.AppVersion -}}
{{- fail (printf `image.repository is required: no public registry carries the image. Load the release's image and push it to a registry your cluster pulls from, then install with --set image.repository=REGISTRY/course-access-groups:
  docker load -i course-access-groups-%s.docker.tar
  docker tag course-access-groups:%s REGISTRY/course-access-groups:%s
  docker push REGISTRY/course-access-groups:%s
(from a clone instead: docker build -t REGISTRY/course-access-groups:%s . then docker push)` $v $v $v $v $v) -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
Names shared with Kafka and MongoDB, derived from the namespace and the release unless set, so two
releases (the same name in two namespaces too) never share a consumer group, a topic or a database.
*/}}
{{- define "cag.kafkaGroupId" -}}
{{- .Values.config.kafkaGroupId | default (printf "course-access-groups.%s.%s" .Release.Namespace .Release.Name) -}}
{{- end -}}

{{/* The topics an Open edX LMS publishes to under EVENT_BUS_TOPIC_PREFIX (edx-event-bus-kafka: "<prefix>-<topic>", the bare name without one); config.kafkaTopics, when set, wins. */}}
{{- define "cag.kafkaTopics" -}}
{{- $prefix := .Values.config.topicPrefix | default "" -}}
{{- $topics := list -}}
{{- range list "user-account-activated" "user-lifecycle" "course-catalog" -}}
{{- $topics = append $topics (ternary (printf "%s-%s" $prefix .) . (ne $prefix "")) -}}
{{- end -}}
{{- .Values.config.kafkaTopics | default (join "," $topics) -}}
{{- end -}}

{{- define "cag.changesTopic" -}}
{{- if .Values.config.changesEnabled -}}
{{- .Values.config.changesTopic | default (printf "course-access-groups.%s.%s.changes" .Release.Namespace .Release.Name) -}}
{{- end -}}
{{- end -}}

{{- define "cag.dlqTopicPrefix" -}}
{{- if kindIs "invalid" .Values.config.dlqTopicPrefix -}}
{{- printf "course-access-groups.%s.%s." .Release.Namespace .Release.Name -}}
{{- else -}}
{{- .Values.config.dlqTopicPrefix -}}
{{- end -}}
{{- end -}}

{{- define "cag.mongoDb" -}}
{{- .Values.config.mongoDb | default (printf "%s_%s" .Release.Namespace .Release.Name | trunc 63 | trimSuffix "-" | trimSuffix "_") -}}
{{- end -}}

{{/* Where the chart mounts Kafka's TLS files and the SASL password file. */}}
{{- define "cag.kafkaTlsDir" -}}/etc/course-access-groups/kafka-tls{{- end -}}
{{- define "cag.kafkaSaslDir" -}}/etc/course-access-groups/kafka-sasl{{- end -}}
{{- define "cag.kafkaClientTlsDir" -}}/etc/course-access-groups/kafka-client-tls{{- end -}}

{{/*
The environment every container of the service gets: the ConfigMap, the secrets (the chart's
Secret whole, or the mapped keys of existingSecret), the SASL password file's path, then the
extra entries. Called with the root context; the role's own entries follow it.
*/}}
{{- define "cag.envFrom" -}}
- configMapRef:
    name: {{ include "cag.fullname" . }}
{{- if not .Values.existingSecret.name }}
- secretRef:
    name: {{ include "cag.fullname" . }}
{{- end }}
{{- with .Values.extraEnvFrom }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "cag.env" -}}
{{- $es := .Values.existingSecret -}}
{{- if $es.name }}
- name: MONGO_URL
  valueFrom:
    secretKeyRef: { name: {{ $es.name | quote }}, key: {{ $es.keys.mongoUrl | quote }} }
{{- if $es.jwtKey }}
- name: {{ $es.jwtKey }}
  valueFrom:
    secretKeyRef: { name: {{ $es.name | quote }}, key: {{ $es.keys.jwt | default $es.jwtKey | quote }} }
{{- end }}
{{- $optional := dict "SCHEMA_REGISTRY_USERNAME" $es.keys.schemaRegistryUsername "SCHEMA_REGISTRY_PASSWORD" $es.keys.schemaRegistryPassword -}}
{{- /* The Secret's SASL password only when it is the one source (a mounted file wins otherwise). */ -}}
{{- if and .Values.kafka.sasl.mechanism (not .Values.kafka.sasl.passwordSecret.name) -}}
{{- $_ := set $optional "KAFKA_SASL_PASSWORD" $es.keys.kafkaSaslPassword -}}
{{- end -}}
{{- range $var, $key := $optional }}
{{- if $key }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef: { name: {{ $es.name | quote }}, key: {{ $key | quote }}, optional: true }
{{- end }}
{{- end }}
{{- /* Required with a client id (the service would exit 2 without it): the kubelet names a missing key. */}}
{{- if .Values.lmsOauth.clientId }}
- name: LMS_OAUTH_CLIENT_SECRET
  valueFrom:
    secretKeyRef: { name: {{ $es.name | quote }}, key: {{ $es.keys.lmsOauthClientSecret | quote }} }
{{- end }}
{{- end }}
{{- if .Values.kafka.sasl.passwordSecret.name }}
- name: KAFKA_SASL_PASSWORD_FILE
  value: {{ printf "%s/%s" (include "cag.kafkaSaslDir" .) .Values.kafka.sasl.passwordSecret.key | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes and mounts of every container of the service: /tmp, Kafka's files, the extra ones. */}}
{{- define "cag.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.tls.caSecret }}
- name: kafka-tls
  mountPath: {{ include "cag.kafkaTlsDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.kafka.tls.certSecret }}
- name: kafka-client-tls
  mountPath: {{ include "cag.kafkaClientTlsDir" . }}
  readOnly: true
{{- end }}
{{- if .Values.kafka.sasl.passwordSecret.name }}
- name: kafka-sasl
  mountPath: {{ include "cag.kafkaSaslDir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "cag.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- with .Values.kafka.tls.caSecret }}
- name: kafka-tls
  secret:
    secretName: {{ . | quote }}
    defaultMode: 288 # 0440: the owner and the pod's group (fsGroup) read
{{- end }}
{{- with .Values.kafka.tls.certSecret }}
- name: kafka-client-tls
  secret:
    secretName: {{ . | quote }}
    defaultMode: 288 # 0440: the owner and the pod's group (fsGroup) read
{{- end }}
{{- with .Values.kafka.sasl.passwordSecret.name }}
- name: kafka-sasl
  secret:
    secretName: {{ . | quote }}
    defaultMode: 288 # 0440: the owner and the pod's group (fsGroup) read
    items:
      - key: {{ $.Values.kafka.sasl.passwordSecret.key | quote }}
        path: {{ $.Values.kafka.sasl.passwordSecret.key | quote }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "cag.secretName" -}}
{{- .Values.existingSecret.name | default (include "cag.fullname" .) -}}
{{- end -}}

{{/*
Refuses values the service would refuse at start-up (it exits 2), at render time instead, with
the same message: a trust path (the service's keys, at most one source of them, and/or the LMS's
issuers with its key set), and the settings without a default.
*/}}
{{- define "cag.validate" -}}
{{- $sources := list -}}
{{- if .Values.auth.jwtSecret }}{{ $sources = append $sources "auth.jwtSecret" }}{{ end -}}
{{- if .Values.auth.jwtPublicKey }}{{ $sources = append $sources "auth.jwtPublicKey" }}{{ end -}}
{{- if .Values.auth.jwksUrl }}{{ $sources = append $sources "auth.jwksUrl" }}{{ end -}}
{{- if .Values.existingSecret.jwtKey }}{{ $sources = append $sources "existingSecret.jwtKey" }}{{ end -}}
{{- $lms := .Values.auth.lms -}}
{{- if gt (len $sources) 1 -}}
{{- fail (printf "set at most one JWT key source: auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey (%s are set)" (join ", " $sources)) -}}
{{- end -}}
{{- if ne (empty $lms.issuers) (empty $lms.jwkSet) -}}
{{- fail (printf "auth.lms.issuers and auth.lms.jwkSet go together (LMS_JWT_ISSUERS and LMS_JWT_PUBLIC_SIGNING_JWK_SET, the LMS's trust path): %s is not set" (ternary "auth.lms.jwkSet" "auth.lms.issuers" (empty $lms.jwkSet))) -}}
{{- end -}}
{{- if and (eq (len $sources) 0) (empty $lms.issuers) -}}
{{- fail "no trust path: set one JWT key source (auth.jwtSecret, auth.jwtPublicKey, auth.jwksUrl or existingSecret.jwtKey: the service's keys), or auth.lms.issuers and auth.lms.jwkSet (the LMS's), or both" -}}
{{- end -}}
{{- if and (eq (len $sources) 0) (or .Values.auth.algorithm .Values.auth.issuer .Values.auth.audience) -}}
{{- fail "auth.algorithm, auth.issuer and auth.audience apply to the service's keys, and no JWT key source is set (auth.lms.issuers holds the LMS's issuers and audiences)" -}}
{{- end -}}
{{- if .Values.existingSecret.name -}}
{{- if or .Values.auth.jwtSecret .Values.auth.jwtPublicKey .Values.secrets.mongoUrl .Values.secrets.schemaRegistryUsername .Values.secrets.schemaRegistryPassword .Values.secrets.lmsOauthClientSecret .Values.kafka.sasl.password -}}
{{- fail "existingSecret.name is set: put MONGO_URL, the JWT key, the registry and Kafka credentials and the LMS OAuth2 client secret in that Secret, not in auth.jwtSecret, auth.jwtPublicKey, secrets.* or kafka.sasl.password" -}}
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
{{- if gt (add .Values.preStopSleepSeconds 10) (int .Values.terminationGracePeriodSeconds) -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must leave the service its 10 s to drain after preStopSleepSeconds (%d): at least %d" (int .Values.terminationGracePeriodSeconds) (int .Values.preStopSleepSeconds) (add .Values.preStopSleepSeconds 10)) -}}
{{- end -}}
{{- if and .Values.secrets.schemaRegistryUsername (hasPrefix "http://" .Values.config.schemaRegistryUrl) -}}
{{- fail "secrets.schemaRegistryUsername: basic auth over an http:// config.schemaRegistryUrl would send the password in clear (the service refuses it at start-up): use the https:// URL of the registry" -}}
{{- end -}}
{{- include "cag.validateKafka" . -}}
{{- include "cag.validateLmsOauth" . -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.hosts) -}}
{{- fail "ingress.enabled: give ingress.hosts (the host names browsers use, e.g. lms.example.org)" -}}
{{- end -}}
{{- if and .Values.httpRoute.enabled (not .Values.httpRoute.parentRefs) -}}
{{- fail "httpRoute.enabled: give httpRoute.parentRefs (the Gateway to attach to, e.g. [{name: public, namespace: gateways}])" -}}
{{- end -}}
{{- end -}}

{{/* Kafka security values the service would refuse, refused here with its setting's name. */}}
{{- define "cag.validateKafka" -}}
{{- $tls := .Values.kafka.tls -}}
{{- $sasl := .Values.kafka.sasl -}}
{{- if and (or $tls.caSecret $tls.certKey $tls.keyKey $tls.certSecret) (not $tls.enabled) -}}
{{- fail "kafka.tls.caSecret, certSecret, certKey or keyKey is set but kafka.tls.enabled is false (KAFKA_SSL=off): turn it on" -}}
{{- end -}}
{{- if ne (empty $tls.certKey) (empty $tls.keyKey) -}}
{{- fail "kafka.tls.certKey and kafka.tls.keyKey go together (mutual TLS: KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE)" -}}
{{- end -}}
{{- if and $tls.certKey (not (or $tls.caSecret $tls.certSecret)) -}}
{{- fail "kafka.tls.certKey and keyKey name keys of kafka.tls.certSecret (or of kafka.tls.caSecret), and neither is set" -}}
{{- end -}}
{{- if and $tls.certSecret (not $tls.certKey) -}}
{{- fail "kafka.tls.certSecret is set: name its certificate and key with kafka.tls.certKey and kafka.tls.keyKey (Strimzi: user.crt and user.key)" -}}
{{- end -}}
{{- $passwords := list -}}
{{- if $sasl.password }}{{ $passwords = append $passwords "kafka.sasl.password" }}{{ end -}}
{{- if $sasl.passwordSecret.name }}{{ $passwords = append $passwords "kafka.sasl.passwordSecret.name" }}{{ end -}}
{{- if and .Values.existingSecret.name $sasl.mechanism .Values.existingSecret.keys.kafkaSaslPassword (not $sasl.password) (not $sasl.passwordSecret.name) }}{{ $passwords = append $passwords "existingSecret.keys.kafkaSaslPassword" }}{{ end -}}
{{- if has $sasl.mechanism (list "oauthbearer" "aws-msk-iam") -}}
{{- if or $sasl.username (gt (len $passwords) 0) -}}
{{- fail (printf "kafka.sasl.mechanism is %s: it takes no kafka.sasl.username nor password" $sasl.mechanism) -}}
{{- end -}}
{{- if and (eq $sasl.mechanism "oauthbearer") (not $sasl.oauthbearerTokenFile) -}}
{{- fail "kafka.sasl.mechanism is oauthbearer: kafka.sasl.oauthbearerTokenFile is required (KAFKA_SASL_OAUTHBEARER_TOKEN_FILE, in a volume of extraVolumes)" -}}
{{- end -}}
{{- if and (eq $sasl.mechanism "aws-msk-iam") (not $sasl.awsRegion) -}}
{{- fail "kafka.sasl.mechanism is aws-msk-iam: kafka.sasl.awsRegion is required (KAFKA_SASL_AWS_REGION)" -}}
{{- end -}}
{{- if and (eq $sasl.mechanism "aws-msk-iam") (not $tls.enabled) -}}
{{- fail "kafka.sasl.mechanism is aws-msk-iam: MSK takes IAM only over TLS: set kafka.tls.enabled" -}}
{{- end -}}
{{- else if $sasl.mechanism -}}
{{- if not $sasl.username -}}
{{- fail (printf "kafka.sasl.mechanism is %s: kafka.sasl.username is required (KAFKA_SASL_USERNAME)" $sasl.mechanism) -}}
{{- end -}}
{{- if ne (len $passwords) 1 -}}
{{- fail (printf "kafka.sasl.mechanism is %s: set exactly one password source: kafka.sasl.password, kafka.sasl.passwordSecret.name or existingSecret.keys.kafkaSaslPassword (%s)" $sasl.mechanism (ternary "none is set" (printf "%s are set" (join ", " $passwords)) (eq (len $passwords) 0))) -}}
{{- end -}}
{{- else if or $sasl.username $sasl.password $sasl.passwordSecret.name -}}
{{- fail "kafka.sasl.username or a password is set but kafka.sasl.mechanism is empty: name it (plain, scram-sha-256 or scram-sha-512)" -}}
{{- end -}}
{{- end -}}

{{/*
The console's sign-in through the LMS, refused here as start-up would refuse it
(src/lms-oauth-settings.ts): settings without a client id, or a client id without what it needs.
*/}}
{{- define "cag.validateLmsOauth" -}}
{{- $o := .Values.lmsOauth -}}
{{- if not $o.clientId -}}
{{- $orphans := list -}}
{{- if $o.url }}{{ $orphans = append $orphans "lmsOauth.url" }}{{ end -}}
{{- if $o.internalUrl }}{{ $orphans = append $orphans "lmsOauth.internalUrl" }}{{ end -}}
{{- if .Values.secrets.lmsOauthClientSecret }}{{ $orphans = append $orphans "secrets.lmsOauthClientSecret" }}{{ end -}}
{{- if $orphans -}}
{{- fail (printf "%s set, but lmsOauth.clientId is not (the console's sign-in through the LMS is on only with a client id)" (join ", " $orphans)) -}}
{{- end -}}
{{- else -}}
{{- $missing := list -}}
{{- if not $o.url }}{{ $missing = append $missing "lmsOauth.url (LMS_OAUTH_URL: the LMS's root as browsers reach it)" }}{{ end -}}
{{- if not .Values.config.publicUrl }}{{ $missing = append $missing "config.publicUrl (PUBLIC_URL: the service's root as browsers reach it)" }}{{ end -}}
{{- if not .Values.auth.lms.issuers }}{{ $missing = append $missing "auth.lms.issuers and auth.lms.jwkSet (the LMS's trust path: it verifies the token the sign-in receives)" }}{{ end -}}
{{- if not (or .Values.existingSecret.name .Values.secrets.lmsOauthClientSecret) }}{{ $missing = append $missing "secrets.lmsOauthClientSecret (LMS_OAUTH_CLIENT_SECRET; or existingSecret.name, read under existingSecret.keys.lmsOauthClientSecret)" }}{{ end -}}
{{- if $missing -}}
{{- fail (printf "lmsOauth.clientId is set (the console's sign-in through the LMS), but not: %s" (join "; " $missing)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The pod template of a Job of the chart, its hash the Job's name: the service's image, environment,
mounts and security, as the roles' pods. (dict "ctx" . "name" "upgrade" "job" .Values.upgradeJob
"command" (list ...)): the component and container name, the Job's values, the command.
*/}}
{{- define "cag.jobPod" -}}
{{- $ctx := .ctx -}}
{{- $j := .job -}}
metadata:
  labels:
    {{- include "cag.selectorLabels" (dict "ctx" $ctx "role" .name) | nindent 4 }}
    {{- with $j.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ cat (include (print $ctx.Template.BasePath "/configmap.yaml") $ctx) (include (print $ctx.Template.BasePath "/secret.yaml") $ctx) | sha256sum }}
    {{- with $j.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  restartPolicy: Never
  serviceAccountName: {{ include "cag.serviceAccountName" $ctx }}
  automountServiceAccountToken: false
  {{- with include "cag.hostNetwork" $ctx }}{{ . | nindent 2 }}{{ end }}
  {{- with $ctx.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $ctx.Values.podSecurityContext | nindent 4 }}
  containers:
    - name: {{ .name }}
      image: {{ include "cag.image" $ctx | quote }}
      imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
      command:
        {{- toYaml .command | nindent 8 }}
      envFrom:
        {{- include "cag.envFrom" $ctx | trim | nindent 8 }}
      env:
        - name: CAG_OPERATOR
          value: helm-{{ .name }}-job
        {{- include "cag.env" $ctx | trim | nindent 8 }}
      resources:
        {{- toYaml $j.resources | nindent 8 }}
      securityContext:
        {{- toYaml $ctx.Values.securityContext | nindent 8 }}
      volumeMounts:
        {{- include "cag.volumeMounts" $ctx | trim | nindent 8 }}
  volumes:
    {{- include "cag.volumes" $ctx | trim | nindent 4 }}
  {{- with $j.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $j.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $j.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* The pod's network: the node's own when hostNetwork (cluster DNS names still resolved). */}}
{{- define "cag.hostNetwork" -}}
{{- if .Values.hostNetwork -}}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end -}}
{{- end -}}
