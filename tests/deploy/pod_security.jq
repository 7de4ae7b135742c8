# SPDX-License-Identifier: Apache-2.0
# tests/deploy/pod_security.jq - which Pod Security Standards level a pod
# spec passes (https://kubernetes.io/docs/concepts/security/pod-security-standards/),
# for tests/deploy/overlay_check.sh (jq -L tests/deploy 'include "pod_security"; ...').
#
# The checks of the standard that a Deployment or DaemonSet of ours could
# fail; not those on annotations (AppArmor) or on /proc mount types we
# never set (procMount other than Default fails baseline, as it should).
# A spec passes a level when pod_security_violations(level) is empty.

def ps_containers: (.initContainers // []) + (.containers // []) + (.ephemeralContainers // []);

# Capabilities as the API spells them, without CAP_.
def ps_caps: map(ascii_upcase | sub("^CAP_"; ""));

def ps_baseline_caps: ["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"];

def ps_safe_sysctls: ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes"];

def ps_restricted_volumes: ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
	"projected", "secret"];

def ps_baseline_violations:
	. as $p
	| [ (if .hostNetwork == true then "hostNetwork" else empty end),
	    (if .hostPID == true then "hostPID" else empty end),
	    (if .hostIPC == true then "hostIPC" else empty end),
	    (.volumes[]? | select(.hostPath != null) | "hostPath volume " + .name),
	    (.securityContext.seccompProfile.type // "" | select(. == "Unconfined") | "pod seccompProfile Unconfined"),
	    (.securityContext.sysctls[]?.name | select(. as $n | ps_safe_sysctls | index($n) | not) | "sysctl " + .),
	    (.securityContext.seLinuxOptions // {} | select((.type // "") as $t | ["", "container_t", "container_init_t", "container_kvm_t"] | index($t) | not)
		| "pod seLinuxOptions.type " + .type),
	    (ps_containers[] | .name as $c
	     | (if .securityContext.privileged == true then "container " + $c + " privileged" else empty end),
	       ((.securityContext.capabilities.add // []) | ps_caps | map(select(. as $x | ps_baseline_caps | index($x) | not))
		| select(length > 0) | "container " + $c + " adds " + join(",")),
	       (.ports[]? | select((.hostPort // 0) != 0) | "container " + $c + " hostPort " + (.hostPort | tostring)),
	       (.securityContext.seccompProfile.type // "" | select(. == "Unconfined") | "container " + $c + " seccompProfile Unconfined"),
	       (.securityContext.procMount // "Default" | select(. != "Default") | "container " + $c + " procMount " + .))
	  ];

def ps_restricted_violations:
	. as $p
	| ps_baseline_violations + [
	    (.volumes[]? | . as $v | (keys - ["name"]) | select(length > 0 and (.[0] as $k | ps_restricted_volumes | index($k) | not))
		| "volume " + $v.name + " of type " + .[0]),
	    (if (.securityContext.runAsUser // -1) == 0 then "pod runAsUser 0" else empty end),
	    (ps_containers[] | .name as $c | (.securityContext // {}) as $s
	     | (if $s.allowPrivilegeEscalation != false then "container " + $c + " allowPrivilegeEscalation not false" else empty end),
	       (if ($s.runAsNonRoot // $p.securityContext.runAsNonRoot // false) != true then "container " + $c + " runAsNonRoot not true" else empty end),
	       (if ($s.runAsUser // -1) == 0 then "container " + $c + " runAsUser 0" else empty end),
	       (($s.seccompProfile.type // $p.securityContext.seccompProfile.type // "")
		| select(. != "RuntimeDefault" and . != "Localhost") | "container " + $c + " seccompProfile " + (if . == "" then "unset" else . end)),
	       (if (($s.capabilities.drop // []) | ps_caps | index("ALL")) == null then "container " + $c + " does not drop ALL capabilities" else empty end),
	       (($s.capabilities.add // []) | ps_caps | map(select(. != "NET_BIND_SERVICE")) | select(length > 0)
		| "container " + $c + " adds " + join(",")))
	  ];

# pod_security_violations(level): what keeps this pod spec out of level.
def pod_security_violations($level):
	if $level == "restricted" then ps_restricted_violations
	elif $level == "baseline" then ps_baseline_violations
	elif $level == "privileged" then []
	else ["unknown level " + $level] end;

# The strictest level this pod spec passes.
def pod_security_level:
	if (ps_restricted_violations | length) == 0 then "restricted"
	elif (ps_baseline_violations | length) == 0 then "baseline"
	else "privileged" end;

# The strictest level every one of an array of levels admits (null if empty).
def strictest_common:
	if length == 0 then null
	elif any(.[]; . == "privileged") then "privileged"
	elif any(.[]; . == "baseline") then "baseline"
	else "restricted" end;
