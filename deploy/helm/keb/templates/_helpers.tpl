{{- define "keb.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "keb.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "keb.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "keb.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "keb.fullname" .) -}}
{{- end -}}

{{- define "keb.poolNamespace" -}}
{{- .Values.rbac.poolNamespace | default (printf "garden-%s" .Values.config.APP_GARDENER_PROJECT) -}}
{{- end -}}

{{- define "keb.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Environment every keb container gets: the ConfigMap, the database Secret, mounted files. */}}
{{- define "keb.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "keb.fullname" . }}
{{- range .Values.envFromConfigMaps }}
  - configMapRef:
      name: {{ . }}
{{- end }}
{{- range .Values.envFromSecrets }}
  - secretRef:
      name: {{ . }}
{{- end }}
env:
  - name: APP_DATABASE_URL
    valueFrom:
      secretKeyRef:
        name: {{ .Values.database.secretName }}
        key: {{ .Values.database.urlKey }}
  - name: APP_DATABASE_SECRET_KEY
    valueFrom:
      secretKeyRef:
        name: {{ .Values.database.secretName }}
        key: {{ .Values.database.secretKeyKey }}
  - name: APP_DATABASE_SECRET_KEYS_PREVIOUS
    valueFrom:
      secretKeyRef:
        name: {{ .Values.database.secretName }}
        key: {{ .Values.database.previousKeysKey }}
        optional: true
{{- if .Values.kcp.kubeconfigSecret }}
  - name: APP_KCP_KUBECONFIG
    value: /etc/keb/kcp/config
{{- end }}
{{- if .Values.gardener.kubeconfigSecret }}
  - name: APP_GARDENER_KUBECONFIG_PATH
    value: /etc/keb/gardener/config
{{- end }}
{{- if .Values.auth.publicKeysSecret }}
  - name: APP_AUTH_PUBLIC_KEY_FILES
    value: {{ include "keb.publicKeyFiles" . }}
{{- end }}
{{- if .Values.cis.secretName }}
  - name: APP_CIS_CLIENT_ID_FILE
    value: /etc/keb/cis/clientId
  - name: APP_CIS_CLIENT_SECRET_FILE
    value: /etc/keb/cis/clientSecret
{{- end }}
{{- if .Values.plansConfigMap }}
  - name: APP_BROKER_PLANS_FILE
    value: /etc/keb/plans/plans.yaml
{{- end }}
{{- if .Values.oidcDefaultConfigMap }}
  - name: APP_BROKER_OIDC_DEFAULT_FILE
    value: /etc/keb/oidc/oidc.yaml
{{- end }}
{{- if .Values.blocklistConfigMap }}
  - name: APP_OPERATION_BLOCKLIST_FILE
    value: /etc/keb/blocklist/blocklist.yaml
{{- end }}
{{- if .Values.hap.rule }}
  - name: APP_HAP_RULE_FILE_PATH
    value: /etc/keb/hap/rules.yaml
{{- end }}
{{- end -}}

{{/* The mounted public keys, comma-separated: every key of the Secret, as listed by lookup at install, or the
     conventional key "issuer.pem" when rendering offline. */}}
{{- define "keb.publicKeyFiles" -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace .Values.auth.publicKeysSecret -}}
{{- if and $s $s.data -}}
{{- $files := list -}}
{{- range $k, $_ := $s.data }}{{ $files = append $files (printf "/etc/keb/auth/%s" $k) }}{{ end -}}
{{- join "," $files | quote -}}
{{- else -}}
"/etc/keb/auth/issuer.pem"
{{- end -}}
{{- end -}}

{{/* What a working install needs: helm install fails with the missing value named, not pods that fail at start. */}}
{{- define "keb.requiredValues" -}}
{{- if not (or .Values.auth.publicKeysSecret .Values.config.APP_AUTH_JWKS_URLS .Values.auth.issuerFromEnv) -}}
{{- fail "keb needs a token issuer: set config.APP_AUTH_JWKS_URLS (and config.APP_AUTH_ISSUER), or auth.publicKeysSecret, or auth.issuerFromEnv=true when envFromSecrets/envFromConfigMaps carry APP_AUTH_JWKS_URLS or APP_AUTH_PUBLIC_KEY_FILES" -}}
{{- end -}}
{{- $_ := required "keb needs its database Secret: set database.secretName (keys: url, secretKey)" .Values.database.secretName -}}
{{- $_ := required "keb needs the database URL's key in database.secretName: set database.urlKey" .Values.database.urlKey -}}
{{- $_ := required "keb needs the sealing key's key in database.secretName (APP_DATABASE_SECRET_KEY): set database.secretKeyKey" .Values.database.secretKeyKey -}}
{{- end -}}
