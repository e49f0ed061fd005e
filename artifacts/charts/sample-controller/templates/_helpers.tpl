{{/*
The controller's image: by digest when one is set (what the kubelet pulls
is then exactly the image pushed), by tag otherwise.
*/}}
{{- define "chart.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
{{- end -}}
