#!/bin/bash
# hypd's on-create lifecycle script for SageMaker HyperPod nodes orchestrated by Amazon EKS.
#
# HyperPod runs this once on every new node (as root), before the node joins the EKS
# cluster. The node's root volume is small; the instance group's extra EBS volume is mounted
# at /opt/sagemaker. Container images and pod ephemeral storage belong there, so this script
# moves containerd's and the kubelet's state directories onto it with bind mounts (kept
# across reboots in /etc/fstab). It downloads nothing.
#
# Everything is logged to /var/log/provision/provisioning.log, which HyperPod ships to
# CloudWatch Logs. A non-zero exit fails the node, so only real errors exit non-zero.

set -uo pipefail

LOG_DIR=/var/log/provision
LOG_FILE="$LOG_DIR/provisioning.log"
DATA_DISK="${HYPD_DATA_DISK:-/opt/sagemaker}"
WAIT_SECONDS=120

mkdir -p "$LOG_DIR"
exec >>"$LOG_FILE" 2>&1

log() {
  printf '%s hypd on_create: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"
}

is_mounted() {
  mountpoint -q "$1"
}

wait_for_disk() {
  local waited=0
  while ! is_mounted "$DATA_DISK"; do
    if [ "$waited" -ge "$WAIT_SECONDS" ]; then
      return 1
    fi
    sleep 5
    waited=$((waited + 5))
  done
  return 0
}

# Bind-mount $1 (a directory on the root volume) onto $DATA_DISK/<name>, copying what is
# there first. Idempotent: a directory already bound is left alone.
relocate() {
  local dir="$1" name target
  name="$(basename "$dir")"
  target="$DATA_DISK/$name"
  if is_mounted "$dir"; then
    log "$dir is already a mount point; leaving it"
    return 0
  fi
  mkdir -p "$dir" "$target"
  if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    cp -a "$dir/." "$target/" || return 1
  fi
  mount --bind "$target" "$dir" || return 1
  if ! grep -qs "^$target $dir " /etc/fstab; then
    printf '%s %s none bind,nofail 0 0\n' "$target" "$dir" >>/etc/fstab
  fi
  log "$dir now lives on $target"
}

main() {
  log "start (instance $(cat /sys/devices/virtual/dmi/id/board_asset_tag 2>/dev/null || echo unknown))"
  if ! wait_for_disk; then
    log "$DATA_DISK is not mounted after ${WAIT_SECONDS}s: keeping containerd and kubelet on the root volume"
    log "done"
    return 0
  fi
  df -h "$DATA_DISK" || true

  # a service running on a directory must not see it swapped underneath: stop, move, start
  local stopped=() unit
  for unit in kubelet containerd; do
    if systemctl is-active --quiet "$unit"; then
      systemctl stop "$unit" && stopped+=("$unit")
    fi
  done
  relocate /var/lib/containerd || { log "could not move /var/lib/containerd"; return 1; }
  relocate /var/lib/kubelet || { log "could not move /var/lib/kubelet"; return 1; }
  for unit in containerd kubelet; do
    if [[ " ${stopped[*]} " == *" $unit "* ]]; then
      systemctl start "$unit"
    fi
  done
  log "done"
}

if ! main; then
  log "failed; waiting 60s so the log reaches CloudWatch before the node is replaced"
  sync
  sleep 60
  exit 1
fi
