#!/bin/sh
# cosmo-router.sh OUT: installs WunderGraph Cosmo's router, pinned, as the
# binary OUT, for `make bench-router COSMO=1` (router/cosmo_bench_test.go
# measures it beside Vitola's router).
#
# The pin is the commit of the tag router@0.341.0 (COSMO_COMMIT), the release
# issue 28's and 42's figures compare with. Its Go module tag is not a semver
# one, so it is named by its pseudo-version (COSMO_VERSION) and installed
# with `go install` from the module proxy. Where the proxy refuses that
# version, COSMO_SRC names a copy of Cosmo's repository (a git directory, bare
# or not, that has the commit) to build the same commit from; a dependency the
# proxy refuses there too (go.withmatt.com/connect-brotli, used only to
# register with Cosmo's control plane, which the benchmark never does) is
# replaced by a stub that compresses nothing.
set -eu
out=$1
COSMO_VERSION=${COSMO_VERSION:-v0.0.0-20260818122706-e7b12b1beac4}
COSMO_COMMIT=${COSMO_COMMIT:-e7b12b1beac4cde7f80cca8b12fdd250ef50cc63}
GO=${GO:-go}
export GONOSUMDB=github.com/wundergraph/cosmo
stamp="$(dirname "$out")/.cosmo-router-$COSMO_COMMIT"
if [ -x "$out" ] && [ -f "$stamp" ]; then
	exit 0
fi
mkdir -p "$(dirname "$out")"
rm -f "$(dirname "$out")"/.cosmo-router-*
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "installing Cosmo's router $COSMO_VERSION (router@0.341.0) into $out"
if GOBIN="$tmp/bin" GOFLAGS=-mod=mod "$GO" install "github.com/wundergraph/cosmo/router/cmd/router@$COSMO_VERSION"; then
	mv "$tmp/bin/router" "$out"
	touch "$stamp"
	exit 0
fi
if [ -z "${COSMO_SRC:-}" ]; then
	echo "the module proxy refused Cosmo's router $COSMO_VERSION: set COSMO_SRC to a git copy of github.com/wundergraph/cosmo to build commit $COSMO_COMMIT from it" >&2
	exit 1
fi
echo "building it from $COSMO_SRC at $COSMO_COMMIT"
git --git-dir="$(git -C "$COSMO_SRC" rev-parse --absolute-git-dir 2>/dev/null || echo "$COSMO_SRC")" \
	archive "$COSMO_COMMIT" router | tar -x -C "$tmp"
cd "$tmp/router"
if ! "$GO" mod download go.withmatt.com/connect-brotli 2>/dev/null; then
	mkdir -p "$tmp/connect-brotli"
	cat >"$tmp/connect-brotli/go.mod" <<'EOF'
module go.withmatt.com/connect-brotli

go 1.21

require connectrpc.com/connect v1.19.2
EOF
	cat >"$tmp/connect-brotli/brotli.go" <<'EOF'
// Package brotli stands in for go.withmatt.com/connect-brotli, which the
// module proxy refused: only registration with Cosmo's control plane uses it.
package brotli

import "connectrpc.com/connect"

const Name = "br"

func WithCompression() connect.Option { return connect.WithOptions() }
EOF
	"$GO" mod edit -replace "go.withmatt.com/connect-brotli=$tmp/connect-brotli"
fi
GOFLAGS=-mod=mod "$GO" build -o "$out" ./cmd/router
touch "$stamp"
