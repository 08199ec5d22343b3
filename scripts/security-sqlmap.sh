#!/usr/bin/env bash
# A bounded SQL-injection pass with Debian's sqlmap against the list endpoints' search, sort and filter
# parameters, on SQLite and on PostgreSQL, loopback only. sqlmap always exits 0, so its output is searched
# for a found injection point. Usage: scripts/security-sqlmap.sh [sqlite|postgres]...
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sqlmap >/dev/null || { echo "sqlmap is not installed (apt-get install -y sqlmap)"; exit 1; }
PG_ADMIN_URL="${PLATFORM_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
PASSWORD='sqlmap-admin-password-1'
# The bundle CI has just built (what users run), else the sources.
if [ -f dist/platform/main.js ]; then PLATFORM_CMD=(dist/platform/main.js); else PLATFORM_CMD=(--import tsx src/main.ts); fi
WORK="$(mktemp -d)"
SERVER_PID=""
DB_NAME=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ -n "$DB_NAME" ]; then psql "$PG_ADMIN_URL" -qc "drop database if exists $DB_NAME with (force)" >/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

scan() { # backend
  local backend="$1" env=()
  env=(PLATFORM_ADMIN_PASSWORD="$PASSWORD" PLATFORM__SERVER__PORT=0 PLATFORM__STORAGE__DATA_DIR="$WORK/$backend"
    PLATFORM__LOGGING__LEVEL=info PLATFORM__RATE_LIMITS__AUTHENTICATED__MAX=1000000
    PLATFORM__RATE_LIMITS__AUTH__MAX=1000 PLATFORM__CONSOLE__ENABLED=false)
  if [ "$backend" = postgres ]; then
    DB_NAME="platform_sqlmap_$$"
    psql "$PG_ADMIN_URL" -qc "create database $DB_NAME" >/dev/null
    env+=(PLATFORM__DATABASE__URL="${PG_ADMIN_URL%/*}/$DB_NAME")
  fi
  mkdir -p "$WORK/$backend"
  # node itself, not npx: the PID killed afterwards must be the server's (npx does not pass the signal on).
  env "${env[@]}" node "${PLATFORM_CMD[@]}" serve > "$WORK/$backend.log" 2>&1 &
  SERVER_PID=$!
  local base=""
  for _ in $(seq 1 120); do
    base="$(grep -o 'listening on http://[0-9.:]*' "$WORK/$backend.log" | head -n1 | sed 's/listening on //')" || true
    [ -n "$base" ] && break
    sleep 0.5
  done
  [ -n "$base" ] || { echo "the platform did not start"; cat "$WORK/$backend.log"; exit 1; }
  local token
  token="$(curl -sf "$base/api/v1/auth/login" -H 'content-type: application/json' \
    -d "{\"username\":\"admin\",\"password\":\"$PASSWORD\"}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')"
  # A few rows so that boolean- and time-based checks have something to tell apart.
  curl -sf "$base/api/v1/events" -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d '{"event_type":"order.created","source":"shop","data":{"n":1}}' >/dev/null
  local urls=(
    "$base/api/v1/admin/users?search=adm&role=admin&status=active&sort=username&order=asc&page=1&per_page=20"
    "$base/api/v1/users?search=adm&sort=username&order=asc"
    "$base/api/v1/events?event_type=order.*&source=shop&correlation_id=abc&status=processed&sort=timestamp&order=asc"
    "$base/api/v1/admin/audit-log?admin_user=admin&resource_type=user&resource_id=abc&order=desc"
  )
  local found=0
  for url in "${urls[@]}"; do
    echo "--- sqlmap ($backend): ${url#"$base"}"
    local rc=0
    timeout 240 sqlmap -u "$url" --batch --level=1 --risk=1 --threads=4 --flush-session \
      --output-dir="$WORK/sqlmap-$backend" -H "Authorization: Bearer $token" > "$WORK/sqlmap.out" 2>&1 || rc=$?
    grep -E "is vulnerable|identified the following injection point|do not appear to be injectable" "$WORK/sqlmap.out" || true
    # A scan that never got to test (bad option, refused connection) must not pass as clean; a timeout that
    # ends a scan under way is judged by what it tested.
    if ! grep -q "testing '" "$WORK/sqlmap.out" || { [ "$rc" != 0 ] && [ "$rc" != 124 ]; }; then
      echo "sqlmap did not run its tests (exit $rc):"; tail -n 30 "$WORK/sqlmap.out"; found=1
    fi
    if grep -q "identified the following injection point" "$WORK/sqlmap.out"; then found=1; cat "$WORK/sqlmap.out"; fi
  done
  if grep -qi '"level":50\|INTERNAL_ERROR' "$WORK/$backend.log"; then echo "the platform logged internal errors during the scan"; found=1; fi
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""
  if [ "$backend" = postgres ]; then psql "$PG_ADMIN_URL" -qc "drop database if exists $DB_NAME with (force)" >/dev/null; DB_NAME=""; fi
  [ "$found" = 0 ] || { echo "FAIL: sqlmap found an injection point ($backend)"; exit 1; }
}

for backend in "${@:-sqlite postgres}"; do
  for b in $backend; do scan "$b"; done
done
echo "sqlmap: no injection point found"
