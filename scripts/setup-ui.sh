#!/usr/bin/env bash
# Build the web UI (frontend/) into the package's static files (src/flightlog/server/static/ui).
# Idempotent and quiet: `npm ci` only when package-lock.json changed, the build only when a
# source changed. With --browser, also make sure Debian's chromium is there for tests/ui.
#
#   scripts/setup-ui.sh             build the UI if needed (make install, make demo)
#   scripts/setup-ui.sh --browser   the same, plus chromium (make test)
set -euo pipefail
cd "$(dirname "$0")/.."

front=frontend
out=src/flightlog/server/static/ui
stamp="$out/.build-stamp"
browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) browser=1 ;;
    *) echo "setup-ui: unknown option $arg (use --browser)" >&2; exit 2 ;;
  esac
done

if [ "$browser" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup-ui: installing Debian's chromium for the browser tests (apt-get)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "setup-ui: /usr/bin/chromium is missing: install it (sudo apt-get install chromium) to run tests/ui" >&2
  fi
fi

# what the build depends on: sources, configuration and the lock file
inputs=$(cd "$front" && find src index.html vite.config.ts tsconfig.json package.json package-lock.json -type f -print0 \
  | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [ -f "$out/index.html" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-ui: npm not found, so the web UI is not built (install Node.js 20+, then run scripts/setup-ui.sh)" >&2
  exit 0
fi
lock=$(sha256sum "$front/package-lock.json" | cut -c1-16)
if [ ! -f "$front/node_modules/.lock-stamp" ] || [ "$(cat "$front/node_modules/.lock-stamp")" != "$lock" ]; then
  (cd "$front" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock" > "$front/node_modules/.lock-stamp"
fi
(cd "$front" && npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn)
echo "$inputs" > "$stamp"
