{{/*
The combinations the processes would refuse at start-up (src/config/secrets.ts, key-custody.ts,
roles/processes.ts), refused at render time instead, with the value to set. values.schema.json
checks each value's shape; this checks how they go together.
*/}}
{{- define "stablegate.validate" -}}
{{- $errors := list -}}
{{- $production := include "stablegate.production" . -}}
{{- $distributed := include "stablegate.distributed" . -}}
{{- $v := .Values -}}
{{- if $distributed -}}
  {{- if not (include "stablegate.hasDatabase" .) -}}
    {{- $errors = append $errors "database.url or database.existingSecret: the api and worker roles need PostgreSQL (the embedded database serves one process: use mode=standalone for that)" -}}
  {{- end -}}
  {{- if and $v.database.roleLogins (not $v.database.existingSecret) -}}
    {{- if not (and $v.database.apiUrl $v.database.workerUrl) -}}
      {{- $errors = append $errors "database.apiUrl and database.workerUrl: database.roleLogins gives each role its own login (stablegate db roles prints the URLs)" -}}
    {{- end -}}
    {{- if and $v.signer.enabled (not $v.database.signerUrl) -}}
      {{- $errors = append $errors "database.signerUrl: database.roleLogins gives the signer its own login" -}}
    {{- end -}}
  {{- end -}}
  {{/* Several processes share one database: each generating its own secrets or seed would not work, in any NODE_ENV. */}}
  {{- if not (include "stablegate.hasServiceSecret" .) -}}
    {{- $errors = append $errors "secrets.existingSecret, or secrets.secretEncryptionKey, secrets.jwtSecret and secrets.metricsToken: every api and worker pod must share them" -}}
  {{- end -}}
  {{- if not (include "stablegate.hasInternalSecret" .) -}}
    {{- $errors = append $errors "internalSecret.existingSecret or internalSecret.value: the workers authenticate to the signer with INTERNAL_SHARED_SECRET" -}}
  {{- end -}}
  {{- if not $v.config.masterXpubs -}}
    {{- $errors = append $errors "config.masterXpubs: the api and worker derive addresses from MASTER_XPUBS (stablegate signer export-xpubs prints it on the signer host)" -}}
  {{- end -}}
  {{- if $v.signer.enabled -}}
    {{- if not (include "stablegate.hasMnemonic" .) -}}
      {{- $errors = append $errors "signer.mnemonic.existingSecret or signer.mnemonic.value: the signer signs with the master mnemonic" -}}
    {{- end -}}
  {{- else if not $v.signer.externalUrl -}}
    {{- $errors = append $errors "signer.externalUrl: with signer.enabled=false the workers need the URL of the signer running elsewhere" -}}
  {{- end -}}
  {{- if and $production $v.signer.enabled (not (and $v.signer.maxOutflowPerHour $v.signer.maxOutflowPerDay)) -}}
    {{- $errors = append $errors "signer.maxOutflowPerHour and signer.maxOutflowPerDay: the signer role requires its outflow cap in production" -}}
  {{- end -}}
{{- else if $production -}}
  {{/* standalone: serve holds everything, the embedded signer included */}}
  {{- if not (include "stablegate.hasServiceSecret" .) -}}
    {{- $errors = append $errors "secrets.existingSecret, or secrets.secretEncryptionKey, secrets.jwtSecret and secrets.metricsToken: production mode generates no secrets" -}}
  {{- end -}}
  {{- if not (include "stablegate.hasInternalSecret" .) -}}
    {{- $errors = append $errors "internalSecret.existingSecret or internalSecret.value: serve holds INTERNAL_SHARED_SECRET in production" -}}
  {{- end -}}
  {{- if not (include "stablegate.hasMnemonic" .) -}}
    {{- $errors = append $errors "signer.mnemonic.existingSecret or signer.mnemonic.value: serve signs in-process" -}}
  {{- end -}}
  {{- if not (and $v.signer.maxOutflowPerHour $v.signer.maxOutflowPerDay) -}}
    {{- $errors = append $errors "signer.maxOutflowPerHour and signer.maxOutflowPerDay: serve embeds the signer and its outflow cap" -}}
  {{- end -}}
{{- end -}}
{{- range $e := $v.api.extraEnv -}}
  {{- if has $e.name (list "INTERNAL_SHARED_SECRET" "MASTER_MNEMONIC" "MASTER_MNEMONIC_FILE") -}}
    {{- $errors = append $errors (printf "api.extraEnv must not hold %s: the api role never calls the signer and never signs" $e.name) -}}
  {{- end -}}
{{- end -}}
{{- range $e := $v.worker.extraEnv -}}
  {{- if has $e.name (list "MASTER_MNEMONIC" "MASTER_MNEMONIC_FILE") -}}
    {{- $errors = append $errors (printf "worker.extraEnv must not hold %s: only the signer holds the mnemonic" $e.name) -}}
  {{- end -}}
{{- end -}}
{{/* The outflow caps come from signer.maxOutflowPerHour/PerDay (checked above), never from a free-form variable that would override them. values.schema.json refuses them in config.env, api.env and signer.env. */}}
{{- range $where := list "api" "signer" -}}
  {{- range $e := (index $v $where).extraEnv -}}
    {{- if has $e.name (list "SIGNER_MAX_OUTFLOW_PER_HOUR" "SIGNER_MAX_OUTFLOW_PER_DAY") -}}
      {{- $errors = append $errors (printf "%s.extraEnv must not hold %s: set signer.maxOutflowPerHour and signer.maxOutflowPerDay" $where $e.name) -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- if $v.ingress.enabled -}}
  {{- if not (and $v.ingress.production.host $v.ingress.sandbox.host) -}}
    {{- $errors = append $errors "ingress.production.host and ingress.sandbox.host: the Host of a request selects its environment" -}}
  {{- else if eq $v.ingress.production.host $v.ingress.sandbox.host -}}
    {{- $errors = append $errors "ingress.sandbox.host must differ from ingress.production.host" -}}
  {{- end -}}
{{- end -}}
{{- if and $v.metrics.serviceMonitor.enabled (not (include "stablegate.hasServiceSecret" .)) -}}
  {{- $errors = append $errors "metrics.serviceMonitor.enabled needs METRICS_TOKEN: secrets.existingSecret or secrets.metricsToken" -}}
{{- end -}}
{{- if $errors -}}
{{- fail (printf "\n\nstablegate: these values are missing or refused:\n  - %s\n" (join "\n  - " $errors)) -}}
{{- end -}}
{{- end -}}
