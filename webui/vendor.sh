#!/usr/bin/env bash
# Re-downloads the vendored browser assets of package webui with `npm pack`
# (from whatever registry npm is configured to use) and copies the few files
# the handlers embed into third_party/<pkg>@<version>/.
#
# To upgrade a package: change its version below, run this script, then update
# the matching version constant in webui.go and run `go test ./webui/`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dest="$here/third_party"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# vendor <pkg>@<version> <file in the tarball>...
# LICENSE (and NOTICE, where the package has one) are always listed.
vendor() {
	local spec=$1
	shift
	local tgz
	tgz=$(cd "$tmp" && npm pack --silent "$spec" | tail -n 1)
	mkdir -p "$tmp/$spec"
	tar -xzf "$tmp/$tgz" -C "$tmp/$spec"
	rm -rf "${dest:?}/$spec"
	mkdir -p "$dest/$spec"
	local f
	for f in "$@"; do
		cp "$tmp/$spec/package/$f" "$dest/$spec/$(basename "$f")"
	done
	echo "vendored $spec"
}

vendor swagger-ui-dist@5.35.0 \
	LICENSE NOTICE swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css
vendor graphiql@4.1.2 \
	LICENSE graphiql.min.js graphiql.min.css
vendor react@18.3.1 \
	LICENSE umd/react.production.min.js
vendor react-dom@18.3.1 \
	LICENSE umd/react-dom.production.min.js

# Checksums of everything vendored, so a review can see exactly what changed.
(cd "$dest" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' |
	xargs sha256sum >SHA256SUMS)
du -sh "$dest"
