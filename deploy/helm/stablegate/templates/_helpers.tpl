{{/* Names ------------------------------------------------------------------------------------ */}}

{{- define "stablegate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-<chart>, or the release name when it already holds the chart name; 63 characters at most less room for "-signer" etc. */}}
{{- define "stablegate.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "stablegate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels: call with (dict "ctx" $ "component" "api") ------------------------------------------ */}}

{{- define "stablegate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "stablegate.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "stablegate.labels" -}}
{{ include "stablegate.selectorLabels" . }}
helm.sh/chart: {{ include "stablegate.chart" .ctx }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: stablegate
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The image reference: repository@digest, else repository:tag (tag default appVersion). */}}
{{- define "stablegate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "stablegate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "stablegate.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Secret names and what is configured ----------------------------------------------------- */}}

{{- define "stablegate.serviceSecretName" -}}
{{- default (printf "%s-service" (include "stablegate.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasServiceSecret" -}}
{{- if or .Values.secrets.existingSecret (and .Values.secrets.secretEncryptionKey .Values.secrets.jwtSecret .Values.secrets.metricsToken) -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.internalSecretName" -}}
{{- default (printf "%s-internal" (include "stablegate.fullname" .)) .Values.internalSecret.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasInternalSecret" -}}
{{- if or .Values.internalSecret.existingSecret .Values.internalSecret.value -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.databaseSecretName" -}}
{{- default (printf "%s-database" (include "stablegate.fullname" .)) .Values.database.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasDatabase" -}}
{{- if or .Values.database.existingSecret .Values.database.url -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.redisSecretName" -}}
{{- default (printf "%s-redis" (include "stablegate.fullname" .)) .Values.redis.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasRedis" -}}
{{- if or .Values.redis.existingSecret .Values.redis.url -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.smtpSecretName" -}}
{{- default (printf "%s-smtp" (include "stablegate.fullname" .)) .Values.smtp.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasSmtp" -}}
{{- if or .Values.smtp.existingSecret .Values.smtp.url -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.mnemonicSecretName" -}}
{{- default (printf "%s-signer" (include "stablegate.fullname" .)) .Values.signer.mnemonic.existingSecret -}}
{{- end -}}

{{- define "stablegate.hasMnemonic" -}}
{{- if or .Values.signer.mnemonic.existingSecret .Values.signer.mnemonic.value -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.production" -}}
{{- if eq .Values.config.nodeEnv "production" -}}true{{- end -}}
{{- end -}}

{{- define "stablegate.distributed" -}}
{{- if eq .Values.mode "distributed" -}}true{{- end -}}
{{- end -}}

{{/* The signer's URL for the workers: the in-chart Service, or signer.externalUrl. */}}
{{- define "stablegate.signerUrl" -}}
{{- if .Values.signer.enabled -}}
{{- printf "http://%s-signer:%d" (include "stablegate.fullname" .) (int .Values.ports.signer) -}}
{{- else -}}
{{- .Values.signer.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* The public base URLs: the configured ones, else from the Ingress hosts. */}}
{{- define "stablegate.productionBaseUrl" -}}
{{- if .Values.config.productionBaseUrl -}}
{{- .Values.config.productionBaseUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.production.host -}}
{{- printf "https://%s" .Values.ingress.production.host -}}
{{- end -}}
{{- end -}}

{{- define "stablegate.sandboxBaseUrl" -}}
{{- if .Values.config.sandboxBaseUrl -}}
{{- .Values.config.sandboxBaseUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.sandbox.host -}}
{{- printf "https://%s" .Values.ingress.sandbox.host -}}
{{- end -}}
{{- end -}}

{{/* Environment ----------------------------------------------------------------------------- */}}

{{/* A secretKeyRef variable: (dict "name" "JWT_SECRET" "secret" "x" "key" "JWT_SECRET") */}}
{{- define "stablegate.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key | default .name }}
{{- end -}}

{{/* The service secrets (api, worker, standalone), when configured. */}}
{{- define "stablegate.serviceSecretEnv" -}}
{{- if include "stablegate.hasServiceSecret" . }}
{{- $secret := include "stablegate.serviceSecretName" . }}
{{- range list "SECRET_ENCRYPTION_KEY" "JWT_SECRET" "METRICS_TOKEN" }}
{{ include "stablegate.secretEnv" (dict "name" . "secret" $secret) }}
{{- end }}
{{- end }}
{{- end -}}

{{/* DATABASE_URL of one role: (dict "ctx" $ "role" "api"); the owner's key unless roleLogins. */}}
{{- define "stablegate.databaseEnv" -}}
{{- $ctx := .ctx -}}
{{- if include "stablegate.hasDatabase" $ctx }}
{{- $key := "DATABASE_URL" }}
{{- if and $ctx.Values.database.roleLogins (ne .role "migrate") (ne .role "serve") }}
{{- $key = printf "DATABASE_URL_%s" (upper .role) }}
{{- end }}
{{ include "stablegate.secretEnv" (dict "name" "DATABASE_URL" "secret" (include "stablegate.databaseSecretName" $ctx) "key" $key) }}
{{- end }}
{{- end -}}

{{- define "stablegate.redisEnv" -}}
{{- if include "stablegate.hasRedis" . }}
{{ include "stablegate.secretEnv" (dict "name" "REDIS_URL" "secret" (include "stablegate.redisSecretName" .)) }}
{{- end }}
{{- end -}}

{{- define "stablegate.smtpEnv" -}}
{{- if include "stablegate.hasSmtp" . }}
{{ include "stablegate.secretEnv" (dict "name" "SMTP_URL" "secret" (include "stablegate.smtpSecretName" .)) }}
{{- end }}
{{- end -}}

{{/* A map of plain variables as EnvVar entries. */}}
{{- define "stablegate.plainEnv" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* Pod-level pieces ------------------------------------------------------------------------ */}}

{{- define "stablegate.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The /tmp emptyDir every pod has (the root filesystem is read-only). */}}
{{- define "stablegate.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end -}}

{{- define "stablegate.volumeMounts" -}}
- name: data
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* Restarts the pods when the rendered configuration or chart-made secrets change. */}}
{{- define "stablegate.configChecksum" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
checksum/secrets: {{ include (print .Template.BasePath "/secrets.yaml") . | sha256sum }}
{{- end -}}

{{/* A block of lines indented by N, or nothing when it is empty: (list N text). */}}
{{- define "stablegate.block" -}}
{{- $text := trim (index . 1) -}}
{{- if $text }}{{ nindent (index . 0) $text }}{{ end -}}
{{- end -}}
