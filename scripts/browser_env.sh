#!/usr/bin/env bash
# The browser tests' environment (tests/test_browser.py), never part of an image: a headless
# Chromium from Debian's packages, and the three JavaScript files grand-challenge.org draws Chart
# outputs with, at the versions the platform pins (vega 5.20.2, vega-lite 5.1.0, vega-embed 6.17.0),
# fetched from the npm registry and checked against the registry's sha512 integrity.
#
#   bash scripts/browser_env.sh        # CI runs it before the test suite; run it once locally
#
# The JavaScript goes to $CHART_BROWSER_DIR (default ~/.cache/evaluation-browser), outside the
# repository; the tests read it from there. Chromium: `chromium` on PATH (installed with apt-get as
# root), else this script unpacks Debian's chromium packages into $CHART_BROWSER_DIR/chromium (apt-get
# download + dpkg -x; the libraries it links must then be on the machine). CHART_CHROMIUM names
# another Chromium binary.
set -euo pipefail

dir="${CHART_BROWSER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evaluation-browser}"
registry="${NPM_REGISTRY:-https://registry.npmjs.org}"
# package version sha512-integrity (npm view <package>@<version> dist.integrity)
PACKAGES=(
    "vega 5.20.2 qmH7aD9GGPpssVdxL1xgcdxTbQzyRUeRR16Os385ymvQhiwCYQNA6+eXUPAZDTVLfk0RXu6Jzj6kUE5jQ80EVw=="
    "vega-lite 5.1.0 HEyf0iHnCNmWkWFIbEmMphcJwZpcBnfnU8v+Ojrndr7ihDueojHMOSikoyz/GNpdkai+QFxLboA6DDCTtFv9iQ=="
    "vega-embed 6.17.0 9eiVZCrLDb/EiVCMbMYouWB/q9dOeVkL5Bh0vU6wsUpIV/bbEvS47uljuo3YSxFqkfNpJ+Qt8xvLRiYSnN4lqw=="
)
mkdir -p "$dir/js"

fetch_js() {
    local name="$1" version="$2" integrity="$3" target="$dir/js/$1-$2.min.js"
    if [ -s "$target" ]; then
        echo "  $name $version: $target (cached)"
        return 0
    fi
    local tarball
    tarball="$(mktemp "$dir/js/$name.XXXXXX.tgz")"
    curl -sSfL --retry 3 -o "$tarball" "$registry/$name/-/$name-$version.tgz"
    if [ "$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)" != "$integrity" ]; then
        rm -f "$tarball"
        echo "browser_env.sh: $name-$version.tgz from $registry does not match its npm integrity" >&2
        return 1
    fi
    # The package's own build, and its licence next to it (vega, vega-lite, vega-embed: BSD-3-Clause).
    tar -xzOf "$tarball" "package/build/$name.min.js" >"$target.partial"
    tar -xzOf "$tarball" package/LICENSE >"$dir/js/$name-$version.LICENSE"
    rm -f "$tarball"
    mv "$target.partial" "$target"
    echo "  $name $version: $target"
}

find_chromium() {
    local candidate
    for candidate in "${CHART_CHROMIUM:-}" "$(command -v chromium || true)" "$dir/chromium/usr/lib/chromium/chromium"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    done
    return 1
}

install_chromium() {
    if find_chromium >/dev/null; then return 0; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "  installing chromium with apt-get"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
    elif command -v apt-get >/dev/null; then
        echo "  not root: unpacking Debian's chromium packages into $dir/chromium (apt-get download + dpkg -x)"
        local work
        work="$(mktemp -d)"
        (cd "$work" && apt-get download chromium chromium-common >/dev/null)
        for deb in "$work"/*.deb; do dpkg -x "$deb" "$dir/chromium"; done
        rm -rf "$work"
    fi
    find_chromium >/dev/null || { echo "browser_env.sh: no Chromium found or installed (set CHART_CHROMIUM to one)" >&2; return 1; }
}

echo "Browser test environment in $dir"
for package in "${PACKAGES[@]}"; do
    # shellcheck disable=SC2086
    fetch_js $package
done
install_chromium
chromium="$(find_chromium)"
echo "  chromium: $chromium ($("$chromium" --version 2>/dev/null | head -n 1))"
