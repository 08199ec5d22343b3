#!/usr/bin/env bash
# Runs scripts/contract-prism.ts: the platform behind the Prism validating proxy (tools from .ci/tools).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .ci/tools/node_modules/.bin/prism ]; then npm ci --prefix .ci/tools --no-audit --no-fund; fi
[ -s openapi.json ] || npx tsx src/main.ts openapi > openapi.json
timeout 300 npx tsx scripts/contract-prism.ts openapi.json
