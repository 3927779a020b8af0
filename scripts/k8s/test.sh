#!/usr/bin/env bash
# `npm run test:k8s`: the Helm chart deploy/helm/course-access-groups, proven in three steps.
#   1. static: helm lint --strict and `helm template` for a matrix of values, every rendered object
#      validated offline against the Kubernetes OpenAPI schemas (test/k8s/chart.test.ts)
#   2. a real control plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager built from
#      the Go module proxy): install, upgrade, rollback, uninstall, PodSecurity restricted
#      admission, server-side strict validation (test/k8s/control-plane.test.ts); the Tutor
#      plugin's own objects, rendered by the real tutor, validated and admitted the same way
#      (test/k8s/tutor-plugin.test.ts)
#   3. a real node (scripts/k8s/node.sh: Debian's containerd and crun, kubelet and kube-scheduler
#      built like the control plane, pods on the host network) joined to that control plane: the
#      chart's pods run, probed, tested, rolled out and evicted (test/k8s/node.test.ts); docs/
#      install-tutor.md's "Tutor for Open edX, Helm for the service" installed and fed by the real
#      Open edX producer (test/k8s/node-tutor.test.ts), against
#      the local stack's MongoDB and Kafka (MONGO_URL, KAFKA_BROKERS; .ci/run's stack). Where no
#      node can be made (not root, no cgroup v1, no local stack) it says why and exits 77, which
#      .ci/run reports as a warning after steps 1 and 2 passed.
# With RELEASE_DIR (a folder `npm run release` wrote), helm lints, renders and installs that
# release's packaged chart (CAG_CHART_TGZ, which may also be set directly) instead of the folder.
# The tools are built once and cached (scripts/k8s/tools.sh: ~/.cache/course-access-groups/k8s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
started=$SECONDS
say() { echo "[k8s] $*" >&2; }

K8S_TOOLS="$(bash scripts/k8s/tools.sh)"
K8S_VALIDATE_PYTHON="$(bash scripts/python-env.sh kubernetes-validate scripts/k8s/validate/requirements.txt)"
export K8S_TOOLS K8S_VALIDATE_PYTHON
if [[ -n ${RELEASE_DIR:-} && -z ${CAG_CHART_TGZ:-} ]]; then
  CAG_CHART_TGZ="$RELEASE_DIR/course-access-groups-$(node -p "require('./package.json').version").tgz"
fi
if [[ -n ${CAG_CHART_TGZ:-} ]]; then
  CAG_CHART_TGZ="$(realpath "$CAG_CHART_TGZ")" || { say "CAG_CHART_TGZ: no such file"; exit 1; }
  [[ -f $CAG_CHART_TGZ ]] || { say "CAG_CHART_TGZ: $CAG_CHART_TGZ is not a file"; exit 1; }
  say "the chart: the packaged $CAG_CHART_TGZ"
  export CAG_CHART_TGZ
fi

say "step 1: the chart rendered, linted and validated offline"
npx jest --config jest.k8s.config.js test/k8s/chart.test.ts

say "step 2: a real control plane on 127.0.0.1 (the chart, then the Tutor plugin's objects)"
export K8S_DIR="${K8S_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/cag-k8s-XXXXXX")}"
control_plane_down() {
  local status=$?
  # On a failure, the servers' own words first: the folder goes with them.
  if [[ $status != 0 && $status != 77 ]]; then
    for log in "$K8S_DIR"/*.log; do [[ -f $log ]] && { say "the end of $log:"; tail -n 15 "$log" >&2; }; done
  fi
  bash scripts/k8s/node.sh stop || true
  bash scripts/k8s/control-plane.sh stop
  rm -rf "$K8S_DIR"
  exit "$status"
}
trap control_plane_down EXIT
bash scripts/k8s/control-plane.sh start
export KUBECONFIG="$K8S_DIR/kubeconfig"
npx jest --config jest.k8s.config.js test/k8s/control-plane.test.ts test/k8s/tutor-plugin.test.ts

say "steps 1 and 2 passed in $((SECONDS - started)) s"

say "step 3: a real node joined to that control plane"
MONGO_URL="${MONGO_URL:-mongodb://127.0.0.1:27017/}"
KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
export MONGO_URL KAFKA_BROKERS
node_status=0
why=""
if ! node scripts/ping-mongo.cjs "$MONGO_URL" || ! node scripts/ping-kafka.cjs "$KAFKA_BROKERS"; then
  node_status=77
  why="no MongoDB at $MONGO_URL or no Kafka at $KAFKA_BROKERS for the pods (start the local stack: npm run stack:start)"
else
  bash scripts/k8s/node.sh start || node_status=$?
  why="scripts/k8s/node.sh could not make a node here (its CANNOT line above says why)"
fi
if [[ $node_status == 0 ]]; then
  npx jest --config jest.k8s.config.js test/k8s/node.test.ts test/k8s/node-tutor.test.ts
  say "steps 1, 2 and 3 passed in $((SECONDS - started)) s"
  exit 0
fi
[[ $node_status == 77 ]] || exit "$node_status"
say "################################################################"
say "WARNING: step 3 (a real node) was NOT run: $why."
say "Pods were admitted and created but never scheduled, started or"
say "probed; helm test did not run. Where a node can be made (root,"
say "cgroup v1, Debian's containerd and crun), scripts/k8s/node.sh"
say "makes one and test/k8s/node.test.ts runs the chart on it. What"
say "only a node proves: deploy/helm/course-access-groups/README.md."
say "################################################################"
exit 77
