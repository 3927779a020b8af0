#!/usr/bin/env bash
# A real node for the control plane of scripts/k8s/control-plane.sh (step 3 of `npm run test:k8s`):
# Debian's containerd with Debian's crun as its runtime, kubelet and kube-scheduler v1.34.4
# (scripts/k8s/tools.sh builds them from the Go module proxy), pods on the host network only
# (no CNI network is made: a loopback-only CNI configuration keeps the runtime's network
# "ready"; never a bridge). Everything lives in $K8S_DIR/node.
#
#   K8S_DIR=DIR bash scripts/k8s/node.sh start   make the node; exit 77 (saying why) where it cannot
#   K8S_DIR=DIR bash scripts/k8s/node.sh stop    stop what `start` started, remove its pods' cgroups
#
# The service's image: the release's archive (RELEASE_DIR's course-access-groups-<version>.docker.tar,
# as `docker save` wrote it), else one layer made from this clone's build (dist/, the production
# node_modules and this machine's node). Its name in the node: docker.io/library/course-access-groups:<version>.
# Ports: K8S_KUBELET_PORT (10250), K8S_KUBELET_HEALTHZ_PORT (10248), K8S_SCHEDULER_PORT (10259).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${K8S_DIR:?set K8S_DIR to the control plane folder}"
NODE="$DIR/node"
KUBELET_PORT="${K8S_KUBELET_PORT:-10250}"
HEALTHZ_PORT="${K8S_KUBELET_HEALTHZ_PORT:-10248}"
SCHEDULER_PORT="${K8S_SCHEDULER_PORT:-10259}"
# The pods' cgroups, in every v1 hierarchy: a name of this node's own.
CGROUP_ROOT="cag-node-$(echo "$NODE" | sha256sum | cut -c1-8)"
say() { echo "[node] $*" >&2; }
cannot() { say "CANNOT MAKE A NODE: $*"; exit 77; }
ctr_() { ctr -a "$NODE/containerd.sock" -n k8s.io "$@"; }

stop_one() {
  local pidfile="$NODE/$1.pid" pid
  [[ -f $pidfile ]] || return 0
  pid="$(cat "$pidfile")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

stop() {
  [[ -d $NODE ]] || return 0
  stop_one kube-scheduler
  stop_one kubelet
  # The pods' containers outlive the kubelet: kill and delete every task, then containerd.
  if [[ -S $NODE/containerd.sock ]]; then
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
    sleep 1
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$task" >/dev/null 2>&1 || true; done
  fi
  stop_one containerd
  # The kubelet's volume mounts, then the cgroups (deepest first).
  grep -o " $NODE/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  for h in /sys/fs/cgroup/*/; do
    [[ -d $h$CGROUP_ROOT ]] && find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  return 0
}

# shellcheck source=scripts/lib/wait-until.sh
source "$ROOT/scripts/lib/wait-until.sh"

# The service's image into the node: the release's archive, else made from this clone's build.
service_image() {
  local version archive
  version="$(node -p "require('$ROOT/package.json').version")"
  archive="${RELEASE_DIR:+$RELEASE_DIR/course-access-groups-$version.docker.tar}"
  if [[ -n $archive && -f $archive ]]; then
    say "the service's image: the release's $archive"
  else
    [[ -f $ROOT/dist/src/main.js ]] || cannot "no release image archive and no build (npm run build)"
    say "the service's image: one layer from this clone's dist/ and production node_modules"
    local rootfs="$NODE/image-rootfs"
    rm -rf "$rootfs" && mkdir -p "$rootfs/tmp" "$rootfs/etc" "$rootfs/app" "$rootfs/usr/bin" "$rootfs/bin"
    chmod 1777 "$rootfs/tmp"
    cp "$(command -v node)" "$rootfs/usr/bin/node"
    cp /bin/sleep "$rootfs/bin/sleep" # the preStop pause
    for lib in $( (ldd "$(command -v node)"; ldd /bin/sleep) | grep -o '/lib[^ ]*' | sort -u); do
      mkdir -p "$rootfs$(dirname "$lib")" && cp -L "$lib" "$rootfs$lib"
    done
    printf 'root:x:0:0::/root:/bin/sh\nnode:x:1000:1000::/home/node:/bin/sh\n' >"$rootfs/etc/passwd"
    printf 'root:x:0:\nnode:x:1000:\n' >"$rootfs/etc/group"
    cp -r "$ROOT/dist" "$ROOT/package.json" "$rootfs/app/"
    (cd "$ROOT" && npm ls --omit=dev --parseable --all 2>/dev/null | tail -n +2) | while read -r dir; do
      [[ -e $rootfs/app/${dir#"$ROOT"/} ]] || { mkdir -p "$rootfs/app/$(dirname "${dir#"$ROOT"/}")" && cp -r "$dir" "$rootfs/app/${dir#"$ROOT"/}"; }
    done
    archive="$NODE/service.oci.tar"
    python3 "$ROOT/scripts/k8s/oci-image.py" "$rootfs" "docker.io/library/course-access-groups:$version" "$archive" \
      '{"Env":["PATH=/usr/local/bin:/usr/bin:/bin","NODE_ENV=production","PORT=8000"],"WorkingDir":"/app","User":"node","Cmd":["node","dist/src/main.js"]}'
    rm -rf "$rootfs"
  fi
  ctr_ images import --all-platforms "$archive" >/dev/null
  # (Listed first: grep -q closing the pipe early fails ctr, and the pipeline with it.)
  local images
  images="$(ctr_ images ls -q)"
  grep -qx "docker.io/library/course-access-groups:$version" <<<"$images" || cannot "the image archive holds no course-access-groups:$version"
}

start() {
  [[ $(id -u) == 0 ]] || cannot "not root (the kubelet and containerd need root)"
  [[ -d /sys/fs/cgroup/memory ]] || cannot "no cgroup v1 memory hierarchy (this script knows cgroup v1 and hybrid hosts only)"
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v crun >/dev/null || missing+=(crun)
  [[ -x /usr/lib/cni/loopback ]] || missing+=(containernetworking-plugins)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  if ((${#missing[@]})); then
    command -v apt-get >/dev/null || cannot "missing ${missing[*]}, and no apt-get"
    # shellcheck source=scripts/lib/apt.sh
    source "$ROOT/scripts/lib/apt.sh"
    say "installing Debian's ${missing[*]}"
    apt_install "${missing[@]}" || cannot "apt-get install ${missing[*]} failed"
  fi
  for port in "$KUBELET_PORT" "$HEALTHZ_PORT" "$SCHEDULER_PORT"; do
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then cannot "port $port is taken"; fi
  done
  local bin node_ip
  bin="$(K8S_NODE_TOOLS=1 bash "$ROOT/scripts/k8s/tools.sh")"
  # The kubelet refuses a loopback node address: the host's own.
  node_ip="$(ip -4 route get 192.0.2.1 2>/dev/null | grep -o 'src [0-9.]*' | cut -d' ' -f2 || true)"
  [[ -n $node_ip ]] || node_ip="$(hostname -I | tr ' ' '\n' | grep -v '^127\.' | head -1)"
  [[ -n $node_ip ]] || cannot "no non-loopback IPv4 address for the node"
  mkdir -p "$NODE"/{root,state,crun,cni-conf,kubelet,certs,pause/rootfs}

  # The pause image: Kubernetes' own pause.c, from the module cache tools.sh filled.
  local pause_c
  pause_c="$(go env GOMODCACHE)/k8s.io/kubernetes@v1.34.4/build/pause/linux/pause.c"
  [[ -f $pause_c ]] || cannot "no $pause_c (the Go module cache of scripts/k8s/tools.sh)"
  gcc -Os -static -DVERSION=3.10 -o "$NODE/pause/rootfs/pause" "$pause_c"
  python3 "$ROOT/scripts/k8s/oci-image.py" "$NODE/pause/rootfs" registry.k8s.io/pause:3.10 "$NODE/pause.oci.tar" \
    '{"Entrypoint":["/pause"],"User":"65535:65535"}'

  echo '{"cniVersion":"0.4.0","name":"loopback-only","plugins":[{"type":"loopback"}]}' >"$NODE/cni-conf/10-loopback.conflist"
  cat >"$NODE/containerd.toml" <<TOML
version = 2
root = "$NODE/root"
state = "$NODE/state"
[grpc]
  address = "$NODE/containerd.sock"
[ttrpc]
  address = "$NODE/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "crun"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
        BinaryName = "$(command -v crun)"
        Root = "$NODE/crun"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NODE/cni-conf"
TOML
  say "containerd $(containerd --version | awk '{print $3}') with crun $(crun --version | head -1 | awk '{print $3}')"
  # crun refuses a hybrid host whose cgroup2 mount has controllers (here: hugetlb): containerd
  # and its containers run in a mount namespace of their own without that mount. Slave
  # propagation: the kubelet's later volume mounts still reach it.
  local hide=""
  if mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then hide="umount /sys/fs/cgroup/unified && "; fi
  unshare -m --propagation slave sh -c "${hide}exec containerd --config '$NODE/containerd.toml'" >"$NODE/containerd.log" 2>&1 &
  echo $! >"$NODE/containerd.pid"
  wait_until "$NODE" containerd 30 ctr -a "$NODE/containerd.sock" version
  ctr_ images import "$NODE/pause.oci.tar" >/dev/null
  service_image

  for h in /sys/fs/cgroup/*/; do
    [[ -f ${h}cgroup.procs && $(stat -fc %T "$h") == cgroupfs ]] && mkdir -p "$h$CGROUP_ROOT"
  done
  if [[ -d /sys/fs/cgroup/cpuset/$CGROUP_ROOT ]]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$CGROUP_ROOT/cpuset.cpus"
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$CGROUP_ROOT/cpuset.mems"
  fi
  cat >"$NODE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The node's address: where the API server reaches it (logs, exec).
address: $node_ip
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
readOnlyPort: 0
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
failSwapOn: false
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
# A shared machine's disk and memory are not this node's to reclaim.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://$NODE/containerd.sock
YAML
  say "kubelet $KUBELET_PORT (node $node_ip) and kube-scheduler $SCHEDULER_PORT"
  # The node is named by its address, so the API server reaches the kubelet (logs) without DNS.
  "$bin/kubelet" --config "$NODE/kubelet.yaml" --kubeconfig "$DIR/kubeconfig" --root-dir "$NODE/kubelet" \
    --cert-dir "$NODE/certs" --hostname-override "$node_ip" --node-ip "$node_ip" >"$NODE/kubelet.log" 2>&1 &
  echo $! >"$NODE/kubelet.pid"
  "$bin/kube-scheduler" --kubeconfig "$DIR/kubeconfig" --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
    --leader-elect=false >"$NODE/kube-scheduler.log" 2>&1 &
  echo $! >"$NODE/kube-scheduler.pid"
  wait_until "$NODE" kubelet 120 sh -c "'$bin/kubectl' --kubeconfig '$DIR/kubeconfig' get node '$node_ip' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
  echo "$node_ip" >"$NODE/ip"
  say "ready: node $node_ip"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: K8S_DIR=DIR $0 start|stop" >&2; exit 2 ;;
esac
