{{/* Names: <release>-edgeplane unless the release already says edgeplane. */}}
{{- define "edgeplane.fullname" -}}
{{- if contains "edgeplane" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-edgeplane" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "edgeplane.labels" -}}
app.kubernetes.io/name: edgeplane
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "edgeplane.selector" -}}
app.kubernetes.io/name: edgeplane
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "edgeplane.image" -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}

{{/* The attachment name of a network: <fullname>-<network>. */}}
{{- define "edgeplane.nadName" -}}
{{- printf "%s-%s" (include "edgeplane.fullname" .root) .network -}}
{{- end -}}

{{/* The SR-IOV network device plugin names a container's VFs in
     PCIDEVICE_<resource name, upper case, [./-] as _>. */}}
{{- define "edgeplane.pciEnv" -}}
{{- printf "PCIDEVICE_%s" (regexReplaceAll "[^A-Za-z0-9]" . "_" | upper) -}}
{{- end -}}

{{/* Control socket directory a data-plane container shares with its agent. */}}
{{- define "edgeplane.socketVolume" -}}
{{- if eq .Values.agent.mode "sidecar" }}
- name: sockets
  emptyDir: {}
{{- else }}
- name: sockets
  hostPath:
    path: {{ printf "%s/%s" .Values.agent.socketDir .Release.Name }}
    type: DirectoryOrCreate
{{- end }}
{{- end -}}

{{/* The agent's volume of the external etcd's client certificate, if any. */}}
{{- define "edgeplane.etcdTLSVolume" -}}
{{- with include "edgeplane.etcdTLSSecret" . }}
- name: etcd-tls
  secret:
    secretName: {{ . }}
{{- end }}
{{- end -}}

{{/* etcd's client URLs for the agents: the controller Service's `etcd`
     port (embedded member) or the external cluster's endpoints. */}}
{{- define "edgeplane.etcdEndpoints" -}}
{{- $e := .Values.controller.etcd -}}
{{- if eq $e.mode "embedded" -}}
{{- printf "http://%s-controller.%s.svc:%d" (include "edgeplane.fullname" .) .Release.Namespace (int $e.embedded.clientPort) -}}
{{- else -}}
{{- join "," $e.external.endpoints -}}
{{- end -}}
{{- end -}}

{{/* The external etcd's client certificate (ca.crt, tls.crt, tls.key), for
     the controller and the agents; empty when there is none. */}}
{{- define "edgeplane.etcdTLSSecret" -}}
{{- $e := .Values.controller.etcd -}}
{{- if ne $e.mode "embedded" }}{{ $e.external.tlsSecret }}{{ end -}}
{{- end -}}

{{/* The enabled pipelines' names, comma-separated. */}}
{{- define "edgeplane.enabledPipelines" -}}
{{- $names := list -}}
{{- range $name, $p := .Values.dataplane.pipelines }}{{ if $p.enabled }}{{ $names = append $names $name }}{{ end }}{{ end -}}
{{- join "," $names -}}
{{- end -}}

{{/* A data-plane container's resources: one VF of its network's pool per
     port, hugepages of one size, integer CPUs. */}}
{{- define "edgeplane.dpResources" -}}
{{- $v := .root.Values -}}
{{- $res := dict -}}
{{- range $port, $pv := .p.ports }}
{{- $net := index $v.networks $pv.network | required (printf "port %s: network %q is not in networks" $port $pv.network) -}}
{{- $_ := set $res $net.resourceName (add1 (get $res $net.resourceName | default 0)) -}}
{{- end -}}
{{- /* Added to the ports' VFs, never written as a second key of the same name. */ -}}
{{- range $rn, $n := .p.extraResources }}
{{- $_ := set $res $rn (add (get $res $rn | default 0) $n) -}}
{{- end -}}
{{- /* Left out when unset, so a values file that forgets one renders a
     pod tests/test_deploy_manifests.py can refuse rather than a "" quantity. */}}
{{- include "edgeplane.cpuMemory" (dict "cpu" .p.cpus "memory" .p.memory) }}
hugepages-{{ .p.hugepages.size }}: {{ .p.hugepages.amount | quote }}
{{- range $rn, $n := $res }}
{{ $rn }}: {{ $n | quote }}
{{- end }}
{{- end -}}

{{/* One data-plane container. Context: dict root, name (uplink|downlink), p (its values). */}}
{{- define "edgeplane.dpContainer" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
  image: {{ include "edgeplane.image" $v.images.dataplane }}
  imagePullPolicy: {{ $v.images.dataplane.pullPolicy }}
  command: ["/bin/sh", "/etc/edgeplane/start.sh", {{ .name | quote }}]
  env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
  resources:
    # Requests equal limits, integer CPUs: Guaranteed QoS, exclusive CPUs
    # from the static CPU manager, hugepages that cannot be overcommitted.
    requests: {{- include "edgeplane.dpResources" . | trim | nindent 6 }}
    limits: {{- include "edgeplane.dpResources" . | trim | nindent 6 }}
  securityContext:
    {{- if $v.dataplane.privileged }}
    privileged: true
    {{- else }}
    privileged: false
    allowPrivilegeEscalation: false
    capabilities:
      drop: [ALL]
      add: {{ concat $v.dataplane.capabilities $v.dataplane.extraCapabilities | toJson }}
    {{- end }}
    readOnlyRootFilesystem: true
    runAsUser: 0
    seccompProfile:
      type: RuntimeDefault
  volumeMounts:
    - name: config
      mountPath: /etc/edgeplane
      readOnly: true
    - name: sockets
      mountPath: /run/edgeplane
    - name: hugepages-{{ .name }}
      mountPath: /dev/hugepages
{{- end -}}

{{/* cpu and memory of a {cpu, memory} value, each left out when unset. */}}
{{- define "edgeplane.cpuMemory" -}}
{{- with .cpu }}
cpu: {{ . | quote }}
{{- end }}
{{- with .memory }}
memory: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The agent container (sidecar or DaemonSet). Context: dict root, and
     pipelines (the names of the edgeplane-dp processes beside it). */}}
{{- define "edgeplane.agentContainer" -}}
{{- $v := .root.Values -}}
{{- $tls := include "edgeplane.etcdTLSSecret" .root -}}
- name: agent
  image: {{ include "edgeplane.image" $v.images.control }}
  imagePullPolicy: {{ $v.images.control.pullPolicy }}
  args:
    - agent
    - --node=$(NODE_NAME)
    - --etcd-endpoints={{ include "edgeplane.etcdEndpoints" .root }}
    {{- if $tls }}
    - --etcd-cacert=/etc/edgeplane/etcd/ca.crt
    - --etcd-cert=/etc/edgeplane/etcd/tls.crt
    - --etcd-key=/etc/edgeplane/etcd/tls.key
    {{- end }}
    {{- /* Every edgeplane-dp beside the agent, by its ctl_socket
           (configmap-dataplane.yaml): each gets the whole bng section. */}}
    {{- range .pipelines }}
    - --bng-socket=/run/edgeplane/{{ . }}.sock
    {{- end }}
    - --metrics=0.0.0.0:{{ $v.agent.metricsPort }}
    {{- range $v.agent.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
  ports:
    - name: metrics
      containerPort: {{ $v.agent.metricsPort }}
      protocol: TCP
  resources:
    requests: {{- include "edgeplane.cpuMemory" $v.agent.resources | nindent 6 }}
    limits: {{- include "edgeplane.cpuMemory" $v.agent.resources | nindent 6 }}
  securityContext:
    privileged: false
    allowPrivilegeEscalation: false
    capabilities:
      drop: [ALL]
      add: {{ $v.agent.capabilities | toJson }}
    readOnlyRootFilesystem: true
    runAsUser: 0
    seccompProfile:
      type: RuntimeDefault
  volumeMounts:
    - name: sockets
      mountPath: /run/edgeplane
    {{- if $tls }}
    - name: etcd-tls
      mountPath: /etc/edgeplane/etcd
      readOnly: true
    {{- end }}
    {{- if eq $v.agent.mode "daemonset" }}
    - name: bpffs
      mountPath: /sys/fs/bpf
    {{- end }}
{{- end -}}
