#!/usr/bin/env bash
# Build topolvm/pvc-autoresizer's manager binary from a bare git mirror.
#
# Usage: build-pvc-autoresizer.sh <mirror-git-dir> <commit>
#   e.g. build-pvc-autoresizer.sh /work/.mirror/topolvm+pvc-autoresizer/repo b19bf07
#
# Env (optional):
#   PEERS_DIR  output root (default ~/.cache/pvx/peers)
#   GOCACHE    Go build cache (default $PEERS_DIR/gocache, i.e. outside the source tree)
#
# Result:
#   $PEERS_DIR/src/pvc-autoresizer-<short>/            pristine `git archive` of <commit>
#   $PEERS_DIR/pvc-autoresizer-<short>/pvc-autoresizer static binary (CGO_ENABLED=0)
# No source changes are made; go.mod/go.sum are used as committed (-mod=readonly default).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <mirror-git-dir> <commit>" >&2
  exit 2
fi
MIRROR=$1
COMMIT_ARG=$2
PEERS_DIR=${PEERS_DIR:-$HOME/.cache/pvx/peers}
export GOCACHE=${GOCACHE:-$PEERS_DIR/gocache}

git -C "$MIRROR" cat-file -e "${COMMIT_ARG}^{commit}" || { echo "commit $COMMIT_ARG not in $MIRROR" >&2; exit 1; }
FULL=$(git -C "$MIRROR" rev-parse "${COMMIT_ARG}^{commit}")
SHORT=${FULL:0:7}
SRC=$PEERS_DIR/src/pvc-autoresizer-$SHORT
OUT=$PEERS_DIR/pvc-autoresizer-$SHORT

echo "commit: $FULL"
rm -rf "$SRC"
mkdir -p "$SRC" "$OUT" "$GOCACHE"
git -C "$MIRROR" archive "$FULL" | tar -x -C "$SRC"

cd "$SRC"
go version
# main package is ./cmd (cmd/main.go + cmd/run.go); upstream Dockerfile builds `cmd/*.go`.
time env CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$OUT/pvc-autoresizer" ./cmd
printf '%s\n' "$FULL" > "$OUT/COMMIT"
sha256sum "$OUT/pvc-autoresizer"
"$OUT/pvc-autoresizer" --help >/dev/null
echo "built: $OUT/pvc-autoresizer"
