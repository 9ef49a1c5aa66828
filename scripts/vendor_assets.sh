#!/usr/bin/env bash
# Fetch the JavaScript the built book needs to work with no network into book/_vendor/ (git-ignored).
#
# Packages come from the npm registry with `npm pack` in a temporary folder (nothing is installed in the repository).
# book/_ext/offline_assets.py copies book/_vendor/ to _build/html/_static/vendor/ and points the pages at it:
#   mathjax/          MathJax 3 (es5/: tex-chtml.js, its fonts and extensions), Sphinx's mathjax_path
#   require.js        RequireJS, loaded by bertviz's views and by ipywidgets' embed manager
#   d3.min.js         d3 5.7.0, the version bertviz's head_view/model_view ask for
#   jquery.min.js     jQuery 2.x (bertviz asks for 2.0.0, which npm does not have; 2.2.4 is the last 2.x)
#   html-manager/     @jupyter-widgets/html-manager's embed-amd.js (static ipywidgets state, if a page has any)
#   ort/              onnxruntime-web's WebAssembly-only build as an ES module (ort.wasm.min.mjs, its loader .mjs and
#                     the 14 MB .wasm, also gzipped: 3.7 MB, which the page unpacks itself with DecompressionStream, on
#                     any static host), which the playground loads when it comes into view (book/_ext/playground_engine.js)
#   tests/axe.min.js  axe-core, the accessibility checker that the browser test runs on every page; for the tests
#                     only: offline_assets.py does not copy tests/ into the built site
# plotly.min.js is not fetched here: the extension copies the one shipped with the installed plotly package, so the
# JavaScript always matches the Python side. Idempotent: does nothing when book/_vendor/ already holds these versions.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST=book/_vendor
PACKAGES=(mathjax@3.2.2 requirejs@2.3.6 d3@5.7.0 jquery@2.2.4 @jupyter-widgets/html-manager@1.0.6 onnxruntime-web@1.30.0
          axe-core@4.14.1)
ORT_FILES=(ort.wasm.min.mjs ort-wasm-simd-threaded.mjs ort-wasm-simd-threaded.wasm)
STAMP="$DEST/.vendored"
WANTED="${PACKAGES[*]} ort: ${ORT_FILES[*]} ort-wasm-simd-threaded.wasm.gz"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANTED" ] && [ -f "$DEST/mathjax/tex-chtml.js" ]; then
    echo "vendor: $DEST is up to date"
    exit 0
fi
command -v npm >/dev/null || { echo "vendor: npm is needed (apt-get install npm)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out="$tmp/out"
mkdir -p "$out/licenses"

for spec in "${PACKAGES[@]}"; do
    name=${spec%@*}
    dir="$tmp/$(echo "$name" | tr '/@' '__')"
    mkdir -p "$dir"
    echo "vendor: npm pack $spec"
    npm pack --silent --loglevel=error --prefer-offline --pack-destination "$dir" "$spec" >/dev/null
    tar -xzf "$dir"/*.tgz -C "$dir"
    license=$(find "$dir/package" -maxdepth 1 -iname 'LICENSE*' | head -n 1)
    [ -n "$license" ] && cp "$license" "$out/licenses/$(basename "$dir").txt"
done

cp -r "$tmp/mathjax/package/es5" "$out/mathjax"
cp "$tmp/requirejs/package/require.js" "$out/require.js"
cp "$tmp/d3/package/dist/d3.min.js" "$out/d3.min.js"
cp "$tmp/jquery/package/dist/jquery.min.js" "$out/jquery.min.js"
mkdir -p "$out/html-manager"
find "$tmp/_jupyter-widgets_html-manager/package/dist" -maxdepth 1 -type f ! -name '*.map' ! -name 'embed.js*' ! -name 'libembed-amd.js' -exec cp {} "$out/html-manager/" \;
mkdir -p "$out/ort"
for file in "${ORT_FILES[@]}"; do
    cp "$tmp/onnxruntime-web/package/dist/$file" "$out/ort/"
done
gzip -9 -n -k "$out/ort/ort-wasm-simd-threaded.wasm"  # -n: no name or time in the header, the same bytes every time
mkdir -p "$out/tests"
cp "$tmp/axe-core/package/axe.min.js" "$out/tests/"
echo "$WANTED" > "$out/.vendored"

rm -rf "$DEST"
mkdir -p "$(dirname "$DEST")"
mv "$out" "$DEST"
echo "vendor: wrote $DEST ($(du -sh "$DEST" | cut -f1))"
