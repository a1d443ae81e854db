# shellcheck shell=bash
# Sourced by scripts/main.sh and scripts/test.sh.

# GPUs of this machine: nvidia-smi -L lines, else entries of /proc/driver/nvidia/gpus, else 0;
# CUDA_VISIBLE_DEVICES (when set) narrows it as tessera-cuda-worker does.
gpu_count() {
  local n=0
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    n="$(nvidia-smi -L | grep -c '^GPU ' || true)"
  elif [[ -d /proc/driver/nvidia/gpus ]]; then
    n="$(find /proc/driver/nvidia/gpus -mindepth 1 -maxdepth 1 | wc -l)"
  fi
  if [[ "$n" -gt 0 && -n "${CUDA_VISIBLE_DEVICES+set}" ]]; then
    local visible="${CUDA_VISIBLE_DEVICES// /}"
    if [[ -z "$visible" ]]; then n=0; else n="$(tr ',' '\n' <<<"$visible" | grep -c .)"; fi
  fi
  echo "$n"
}
