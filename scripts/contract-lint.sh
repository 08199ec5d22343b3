#!/usr/bin/env bash
# Checks the OpenAPI document the platform generates with three tools nobody on the project wrote:
# the official OpenAPI 3.1 JSON Schemas (@seriousme/openapi-schema-validator), Spectral with the OWASP API
# ruleset (.spectral.yaml), and Redocly. Any error fails. The heavy tools live in .ci/tools (pinned in its
# package-lock.json), outside the platform's own install.
set -euo pipefail
cd "$(dirname "$0")/.."
export REDOCLY_TELEMETRY=off SCARF_ANALYTICS=false

if [ ! -x .ci/tools/node_modules/.bin/spectral ] || [ .ci/tools/package-lock.json -nt .ci/tools/node_modules ]; then
  npm ci --prefix .ci/tools --no-audit --no-fund
fi

npx tsx src/main.ts openapi > openapi.json
echo "--- OpenAPI 3.1 schema validation"
npx validate-api openapi.json
# Spectral resolves the OWASP ruleset package from the ruleset file's folder, so a copy sits beside the tools;
# the override paths are rewritten to point back at the document in the repository root.
sed 's#"openapi.json\##"../../openapi.json\##g' .spectral.yaml > .ci/tools/.spectral.yaml
echo "--- Spectral (spectral:oas + OWASP API Security Top 10)"
.ci/tools/node_modules/.bin/spectral lint openapi.json --ruleset .ci/tools/.spectral.yaml --fail-severity=error
echo "--- Redocly"
.ci/tools/node_modules/.bin/redocly lint openapi.json
