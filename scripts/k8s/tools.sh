#!/usr/bin/env bash
# The Kubernetes tools the chart's tests use, built from the Go module proxy at the versions pinned
# in scripts/k8s/kube/go.mod (etcd, kube-apiserver, kube-controller-manager, kubectl: one
# Kubernetes release) and scripts/k8s/helm/go.mod (helm), and cached by version in
# $K8S_TOOLS_CACHE (default ~/.cache/course-access-groups/k8s). Prints the folder that holds the
# five binaries. Progress goes to stderr.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KUBE_VERSION=v1.34.4 # k8s.io/kubernetes in scripts/k8s/kube/go.mod
HELM_VERSION=v3.19.5 # helm.sh/helm/v3 in scripts/k8s/helm/go.mod
CACHE="${K8S_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/k8s}"
# The folder's name changes with either module's pins, so a changed pin builds anew.
KEY="$(cat "$ROOT"/scripts/k8s/kube/go.{mod,sum} "$ROOT"/scripts/k8s/kube/etcd/main.go \
  "$ROOT"/scripts/k8s/helm/go.{mod,sum} | sha256sum | cut -c1-12)"
BIN="$CACHE/$KUBE_VERSION-helm-$HELM_VERSION-$KEY"
say() { echo "[k8s-tools] $*" >&2; }

# Built only when all five are there: a folder holding some of them (a build stopped half-way, or
# a helm put there by hand) is built again.
built() { local b; for b in etcd kube-apiserver kube-controller-manager kubectl helm; do [[ -x "$BIN/$b" ]] || return 1; done; }
if ! built; then
  command -v go >/dev/null || { say "Go is needed to build the Kubernetes tools"; exit 1; }
  tmp="$BIN.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  start=$SECONDS
  minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  # Without these the binaries report v0.0.0-master, which kubectl and helm cannot parse.
  kver="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
    -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION
    -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  say "building etcd, kube-apiserver, kube-controller-manager and kubectl $KUBE_VERSION (minutes on a cold cache)"
  (cd "$ROOT/scripts/k8s/kube" && GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags "-s -w $kver" -o "$tmp/" \
    ./etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl)
  say "building helm $HELM_VERSION"
  # Helm's own Makefile sets these: its version, and the Kubernetes version `helm template` and
  # `helm lint` assume without a cluster.
  hver="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
  (cd "$ROOT/scripts/k8s/helm" && GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags "-s -w $hver" -o "$tmp/" \
    helm.sh/helm/v3/cmd/helm)
  rm -rf "$BIN" && mv "$tmp" "$BIN"
  say "built in $((SECONDS - start)) s: $(du -sh "$BIN" | cut -f1) in $BIN"
fi
# The node's (scripts/k8s/node.sh asks with K8S_NODE_TOOLS=1): kubelet and kube-scheduler of the
# same release, built once into the same folder (minutes on a cold cache, seconds on a warm one).
if [[ -n ${K8S_NODE_TOOLS:-} && ! -x "$BIN/kubelet" ]]; then
  tmp="$BIN/node.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  start=$SECONDS
  minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  kver="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  say "building kubelet and kube-scheduler $KUBE_VERSION"
  (cd "$ROOT/scripts/k8s/kube" && GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags "-s -w $kver" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler)
  mv "$tmp/kube-scheduler" "$tmp/kubelet" "$BIN/" && rm -rf "$tmp"
  say "built in $((SECONDS - start)) s"
fi
echo "$BIN"
