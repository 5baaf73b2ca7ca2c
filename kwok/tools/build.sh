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
# recipe names how a binary is built; bump it when a command below changes
# in a way the inputs hashed into its stamp do not show.
recipe=2

# Each binary's stamp covers the inputs that decide what it is, so that
# changing one (the kwok patch, say) rebuilds that binary alone.
stamp_of() { { echo "$recipe"; cat "$@"; } | sha256sum | cut -c1-16; }
fresh() { [ -x "$out/$1" ] && [ "$(cat "$out/.$1.stamp" 2>/dev/null)" = "$2" ]; }
mark() { echo "$2" > "$out/.$1.stamp"; }

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=36 \
 -X $pkg.gitTreeState=clean -X $pkg.buildDate=2026-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=36"

cd "$here"
k8s_stamp=$(stamp_of "$here/go.mod" "$here/go.sum" <(echo "$ldflags"))
for bin in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if fresh "$bin" "$k8s_stamp"; then continue; fi
  echo "building $bin $k8s_version" >&2
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$bin.tmp" "k8s.io/kubernetes/cmd/$bin"
  mv "$out/$bin.tmp" "$out/$bin" && mark "$bin" "$k8s_stamp"
  echo "built $bin in $(( $(date +%s) - start ))s" >&2
done

etcd_stamp=$(stamp_of "$here/go.mod" "$here/go.sum" "$here/etcd/main.go")
if ! fresh etcd "$etcd_stamp"; then
  echo "building etcd" >&2
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd
  mv "$out/etcd.tmp" "$out/etcd" && mark etcd "$etcd_stamp"
fi

# kwok and kwokctl build from their own go.mod, exactly as released.
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version \
 -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$k8s_version"
kwok_stamp=$(stamp_of <(echo "$kwok_version $kwok_ldflags"))
for bin in kwok kwokctl; do
  if fresh "$bin" "$kwok_stamp"; then continue; fi
  echo "building $bin $kwok_version" >&2
  gobin=$(mktemp -d)
  CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath -ldflags "$kwok_ldflags" "sigs.k8s.io/kwok/cmd/$bin@$kwok_version"
  mv "$gobin/$bin" "$out/$bin" && rmdir "$gobin" && mark "$bin" "$kwok_stamp"
done

# kwok-resume is the same kwok controller with four patches:
# patches/kwok-watch-resume.patch makes its watches resume from the last
# resourceVersion they saw, where v0.8.0 starts every watch, each one after a
# close too, from "0" and works through every object again;
# patches/kwok-outage-recovery.patch retries a stage whose request lost its
# connection (kube-apiserver killed under it), which v0.8.0 drops for good,
# and caps the backoff of its watches (pods, and the caches of nodes and
# leases) at about a second (client-go's reaches 30-60 s after an outage:
# nodes made after a 10-s one were taken up 23 s later);
# patches/kwok-lease-spread.patch makes each node's
# first lease renewal come at a random point of the renewal interval, so that
# nodes made together do not all renew within 2 s of each other every 50 s;
# patches/kwok-pprof-cpu.patch serves a CPU profile (and symbol and trace)
# beside the named profiles under /debug/pprof/, which v0.8.0's debugging
# handlers leave out, so that a profiled run (dsbench --profile) reads kwok's CPU.
# The module comes from the Go module proxy as released; the patches are
# applied to a copy, in this order.
resume_patches=("$here/patches/kwok-watch-resume.patch" "$here/patches/kwok-outage-recovery.patch" "$here/patches/kwok-lease-spread.patch" "$here/patches/kwok-pprof-cpu.patch")
resume_recipe="git apply" # how the patches are applied; part of the stamp
resume_stamp=$(stamp_of <(echo "$kwok_version $kwok_ldflags $resume_recipe") "${resume_patches[@]}")
if ! fresh kwok-resume "$resume_stamp"; then
  echo "building kwok-resume $kwok_version with $(cd "$here/patches" && echo *.patch)" >&2
  src=$(go mod download -json "sigs.k8s.io/kwok@$kwok_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "build.sh: no source folder for sigs.k8s.io/kwok@$kwok_version" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$src" "$work/kwok" && chmod -R u+w "$work/kwok"
  # git, not patch(1), which a clean Debian machine may lack. The ceiling keeps
  # git from taking a repository above the copy for its own; a hunk that
  # does not apply exactly (or was applied already) fails the build.
  for patch in "${resume_patches[@]}"; do
    GIT_CEILING_DIRECTORIES="$work" git -C "$work/kwok" apply --verbose "$patch" >&2
  done
  (cd "$work/kwok" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "$kwok_ldflags" -o "$out/kwok-resume.tmp" ./cmd/kwok)
  mv "$out/kwok-resume.tmp" "$out/kwok-resume" && mark kwok-resume "$resume_stamp"
  rm -rf "$work"
fi
