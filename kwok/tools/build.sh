#!/usr/bin/env bash
# Builds the pinned KWOK control plane from the Go module proxy into $1 (the
# binary cache). A binary is rebuilt only when it is missing or when the pins
# in this folder changed since it was built, so a second run builds nothing.
set -euo pipefail

out=${1:?usage: build.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

k8s_version=v1.36.4
kwok_version=v0.8.0
# The stamp covers every input that decides what the binaries are.
stamp=$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/build.sh" | sha256sum | cut -c1-16)

fresh() { [ -x "$out/$1" ] && [ "$(cat "$out/.$1.stamp" 2>/dev/null)" = "$stamp" ]; }
mark() { echo "$stamp" > "$out/.$1.stamp"; }

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=36 \
 -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"

cd "$here"
for bin in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if fresh "$bin"; then continue; fi
  echo "building $bin $k8s_version" >&2
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$bin.tmp" "k8s.io/kubernetes/cmd/$bin"
  mv "$out/$bin.tmp" "$out/$bin" && mark "$bin"
  echo "built $bin in $(( $(date +%s) - start ))s" >&2
done

if ! fresh etcd; then
  echo "building etcd" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd
  mv "$out/etcd.tmp" "$out/etcd" && mark etcd
fi

# kwok and kwokctl build from their own go.mod, exactly as released.
for bin in kwok kwokctl; do
  if fresh "$bin"; then continue; fi
  echo "building $bin $kwok_version" >&2
  gobin=$(mktemp -d)
  CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath -ldflags "-s -w \
    -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version \
    -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$k8s_version" "sigs.k8s.io/kwok/cmd/$bin@$kwok_version"
  mv "$gobin/$bin" "$out/$bin" && rmdir "$gobin" && mark "$bin"
done
