#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl for the envtest suites and the dev
# stack from the Go module proxy alone (no release downloads), into OUT_DIR
# (bin/k8s). Each binary has a version stamp, so reruns cost nothing. Cold
# build on 2 cores: about 6 minutes and 2.4 GB RAM at the link step.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
OUT_DIR="${OUT_DIR:-bin/k8s}"

mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"

# fresh NAME VERSION: is OUT_DIR/NAME built at VERSION?
fresh() { [[ -x "$OUT_DIR/$1" && "$(cat "$OUT_DIR/.$1.version" 2>/dev/null)" == "$2" ]]; }
stamp() { echo "$2" >"$OUT_DIR/.$1.version"; }

need_k8s=()
fresh kube-apiserver "$K8S_VERSION" || need_k8s+=(kube-apiserver)
fresh kubectl "$K8S_VERSION" || need_k8s+=(kubectl)
need_etcd=0
fresh etcd "$ETCD_VERSION" || need_etcd=1
if [[ ${#need_k8s[@]} -eq 0 && $need_etcd -eq 0 ]]; then
  exit 0
fi
echo ">> building ${need_k8s[*]} $( ((need_etcd)) && echo etcd) into $OUT_DIR (the first build takes about 6 minutes on 2 cores)"
total_start=$SECONDS
# progress NAME START: one line per binary with its build time, so a long build shows it is moving.
progress() { echo "   $1 built in $((SECONDS - $2))s (total $((SECONDS - total_start))s)"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/keb-k8s-bins.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod

if [[ ${#need_k8s[@]} -gt 0 ]]; then
  # k8s.io/kubernetes requires its staging modules (k8s.io/api, ...) at
  # v0.0.0 with replaces that only apply inside its own repository; a wrapper
  # module replaces each with its published v0.<minor>.<patch>.
  minor="$(cut -d. -f2 <<<"$K8S_VERSION")"
  patch="$(cut -d. -f3 <<<"$K8S_VERSION")"
  mkdir -p "$work/k8s"
  cd "$work/k8s"
  go mod init keb.local/k8s-bins >/dev/null 2>&1
  gomod="$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [[ -f "$gomod" ]] || { echo "k8s.io/kubernetes@v$K8S_VERSION is not served by the module proxy" >&2; exit 1; }
  {
    echo "require k8s.io/kubernetes v$K8S_VERSION"
    echo "replace ("
    awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print "\t" $1 " => " $1 " v0.'"$minor.$patch"'"}' "$gomod" | sort -u
    echo ")"
  } >>go.mod
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  for bin in "${need_k8s[@]}"; do
    start=$SECONDS
    echo "   building $bin v$K8S_VERSION ..."
    go get "k8s.io/kubernetes/cmd/$bin@v$K8S_VERSION" >/dev/null 2>&1 || go get "k8s.io/kubernetes/cmd/$bin@v$K8S_VERSION"
    go build -trimpath -ldflags "$ldflags" -o "$OUT_DIR/$bin" "k8s.io/kubernetes/cmd/$bin"
    stamp "$bin" "$K8S_VERSION"
    progress "$bin" "$start"
  done
fi

if ((need_etcd)); then
  start=$SECONDS
  echo "   building etcd v$ETCD_VERSION ..."
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  go mod init keb.local/etcd-bin >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null 2>&1 || go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$OUT_DIR/etcd" go.etcd.io/etcd/server/v3
  stamp etcd "$ETCD_VERSION"
  progress etcd "$start"
fi
"$OUT_DIR/kube-apiserver" --version
