#!/usr/bin/env bash
# A real Kubernetes control plane on 127.0.0.1 for the chart's tests: etcd, kube-apiserver and
# kube-controller-manager (scripts/k8s/tools.sh builds them), no node. Everything lives in
# $K8S_DIR (its data, certificates, logs, pids and `kubeconfig`, an admin's token).
#
#   K8S_DIR=DIR bash scripts/k8s/control-plane.sh start   start it; waits until it serves
#   K8S_DIR=DIR bash scripts/k8s/control-plane.sh stop    stop what `start` started there
#
# Ports: K8S_ETCD_PORT (23790; its peer port +1) and K8S_API_PORT (16443).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${K8S_DIR:?set K8S_DIR to the control plane folder}"
ETCD_PORT="${K8S_ETCD_PORT:-23790}"
API_PORT="${K8S_API_PORT:-16443}"
say() { echo "[control-plane] $*" >&2; }

stop_one() {
  local pidfile="$DIR/$1.pid" pid
  [[ -f $pidfile ]] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

launch() { # name binary args...
  local name="$1" bin="$2"
  shift 2
  "$bin" "$@" >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

# shellcheck source=scripts/lib/wait-until.sh
source "$ROOT/scripts/lib/wait-until.sh"

start() {
  local bin
  bin="$(bash "$ROOT/scripts/k8s/tools.sh")"
  mkdir -p "$DIR/pki"
  for port in "$ETCD_PORT" $((ETCD_PORT + 1)) "$API_PORT"; do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then say "port $port is taken"; exit 1; fi
  done
  # The service-account signing key, and the one token the tests use (system:masters).
  openssl genrsa -out "$DIR/pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$DIR/pki/sa.key" -pubout -out "$DIR/pki/sa.pub" 2>/dev/null
  local token
  token="$(openssl rand -hex 24)"
  echo "$token,cag-test-admin,cag-test-admin,system:masters" >"$DIR/pki/tokens.csv"
  cat >"$DIR/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: local
    cluster: {server: "https://127.0.0.1:$API_PORT", insecure-skip-tls-verify: true}
users:
  - name: admin
    user: {token: "$token"}
contexts:
  - name: local
    context: {cluster: local, user: admin}
current-context: local
KUBECONFIG

  say "etcd on 127.0.0.1:$ETCD_PORT"
  # No fsync: the data are thrown away with the folder, and fsync is slow on a shared disk.
  launch etcd "$bin/etcd" --name cag --data-dir "$DIR/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "cag=http://127.0.0.1:$((ETCD_PORT + 1))" --listen-metrics-urls "" \
    --log-level warn
  wait_until "$DIR" etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

  say "kube-apiserver on https://127.0.0.1:$API_PORT"
  # --endpoint-reconciler-type=none: no node, so nothing to point the kubernetes Service at.
  # The service range is configuration only: nothing is ever sent there.
  launch kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --cert-dir "$DIR/pki" --endpoint-reconciler-type none --authorization-mode RBAC \
    --token-auth-file "$DIR/pki/tokens.csv" --service-cluster-ip-range 10.96.0.0/16 \
    --service-account-key-file "$DIR/pki/sa.pub" --service-account-signing-key-file "$DIR/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local
  wait_until "$DIR" kube-apiserver 90 "$bin/kubectl" --kubeconfig "$DIR/kubeconfig" get --raw /readyz

  say "kube-controller-manager"
  # Its controllers turn Deployments into ReplicaSets and Pods, make each namespace's `default`
  # ServiceAccount, and collect what an uninstall leaves (the garbage collector).
  launch kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$DIR/kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$DIR/pki/sa.key" --use-service-account-credentials=false \
    --cluster-name cag-test
  wait_until "$DIR" kube-controller-manager 60 "$bin/kubectl" --kubeconfig "$DIR/kubeconfig" -n default get serviceaccount default
  say "ready: KUBECONFIG=$DIR/kubeconfig"
}

case "${1:-}" in
  start) start ;;
  stop) stop_one kube-controller-manager; stop_one kube-apiserver; stop_one etcd ;;
  *) echo "usage: K8S_DIR=DIR $0 start|stop" >&2; exit 2 ;;
esac
