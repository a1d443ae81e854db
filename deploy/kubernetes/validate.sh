#!/usr/bin/env bash
# Validates the manifests in this folder against Kubernetes' schemas, offline:
#   - kubernetes-validate (PyPI; it carries the schemas of each Kubernetes release) in strict
#     mode, which rejects unknown fields and wrong types; from $TESSERA_PYENV (scripts/python_env.sh)
#     or PATH;
#   - kubectl kustomize, when kubectl is there: the kustomization builds (no cluster needed).
# `kubectl apply --dry-run=client` is not used: it needs an API server even with --validate=false.
# Exit 77 (ctest: skipped) when no schema checker is installed, with the reason.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="${TESSERA_K8S_VERSION:-1.32.0}"

validator=""
for c in "${TESSERA_PYENV:-$HOME/.cache/tessera/pyenv}/bin/kubernetes-validate" "$(command -v kubernetes-validate || true)"; do
  if [[ -n "$c" && -x "$c" ]]; then validator="$c"; break; fi
done
if [[ -z "$validator" ]]; then
  echo "validate.sh: kubernetes-validate is not installed (scripts/python_env.sh installs it); not validated" >&2
  exit 77
fi

manifests=("$here"/secret.yaml "$here"/scheduler.yaml "$here"/worker.yaml "$here"/worker-gpu.yaml)
"$validator" --strict --kubernetes-version "$version" "${manifests[@]}"

if command -v kubectl >/dev/null; then
  out="$(kubectl kustomize "$here")"
  n="$(grep -c '^kind:' <<< "$out")"
  (( n == 5 )) || { echo "validate.sh: kustomize gave $n resources, expected 5" >&2; exit 1; }
  echo "validate.sh: kubectl kustomize builds the $n resources"
fi
