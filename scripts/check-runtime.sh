#!/bin/sh
# The production runtime tree, as the image's final stage holds it, checked without a registry:
# build dist/, copy it with package.json and the lock file into a clean directory, prune its
# node_modules to production dependencies (no tsx, no TypeScript), start it with `npm start` (the
# documented entry point) in production mode after `npm run migrate`, probe readiness, send SIGTERM to npm and see the
# node process drain and exit 0 with nothing left listening, and every output line be JSON.
#
#   sh scripts/check-runtime.sh            # builds first
#   SKIP_BUILD=1 sh scripts/check-runtime.sh
#
# Uses 127.0.0.1 only; stops by itself (readiness within 90 s, the drain within 20 s).
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/runtime-check.XXXXXX")
PID=
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
say() { printf '%s\n' "check-runtime: $*" >&2; }
fail() { say "FAIL: $*"; [ -f "$WORK/out.log" ] && tail -n 30 "$WORK/out.log" >&2; exit 1; }

cd "$ROOT"
[ "${SKIP_BUILD:-}" = 1 ] || npm run --silent build >&2
[ -f dist/main.js ] || fail "dist/main.js is missing (npm run build)"

# The runtime tree: dist/, package.json, the lock file, and production dependencies only. The
# installed tree is linked (cp -l: no bytes copied) and pruned offline; the linked hidden lock
# file is unlinked first so npm's rewrite of it cannot reach the source tree's copy.
APP="$WORK/app"
mkdir -p "$APP"
cp -R dist "$APP/dist"
cp package.json package-lock.json "$APP/"
cp -Rl node_modules "$APP/node_modules"
rm -f "$APP/node_modules/.package-lock.json"
(cd "$APP" && npm prune --omit=dev --offline --ignore-scripts --no-audit --no-fund >/dev/null 2>&1) || fail "npm prune --omit=dev failed"
for dev in tsx typescript jest ts-jest eslint; do
  [ ! -e "$APP/node_modules/$dev" ] || fail "dev dependency $dev is still in the runtime tree"
done
say "runtime tree: $(du -sh "$APP/node_modules" | cut -f1) of production dependencies"

PORT=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')
KEY=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64"))')
cat >"$WORK/config.json" <<EOF
{
  "env": "production",
  "host": "127.0.0.1",
  "metrics": { "port": 0 },
  "auth": { "jwt_secret": "$SECRET" },
  "secrets": { "encryption_keys": [{ "id": "k1", "key_env": "CHECK_SECRETS_KEY" }] },
  "mail": { "allow_log_transport": true, "link_base": "http://127.0.0.1" },
  "security_txt": { "contact": "mailto:security@runtime-check.invalid" },
  "http": { "shutdown_grace_ms": 3000 }
}
EOF

cd "$APP"
# Migrations as their own step, then a node that only checks them (db.migrate_on_start: false).
# A clean environment: PATH only, as a supervisor would give it.
env -i PATH="$PATH" HOME="$WORK" SVC_CONFIG="$WORK/config.json" SVC_DATA_DIR="$WORK/data" CHECK_SECRETS_KEY="$KEY" \
  npm --silent run migrate >"$WORK/migrate.log" 2>&1 || { cat "$WORK/migrate.log" >&2; fail "npm run migrate failed"; }
applied=$(grep -c '"msg":"migration applied"' "$WORK/migrate.log" || true)
[ "$applied" -gt 0 ] || fail "npm run migrate logged no migration"
say "npm run migrate: $applied migrations applied, a line each"
env -i PATH="$PATH" HOME="$WORK" SVC_CONFIG="$WORK/config.json" SVC_DATA_DIR="$WORK/data" PORT="$PORT" CHECK_SECRETS_KEY="$KEY" SVC_DB__MIGRATE_ON_START=false \
  npm --silent start >"$WORK/out.log" 2>"$WORK/err.log" &
PID=$!

started=$(date +%s)
until curl -fsS "http://127.0.0.1:$PORT/v1/health/ready" >/dev/null 2>&1; do
  kill -0 "$PID" 2>/dev/null || fail "the process exited before it was ready"
  [ $(( $(date +%s) - started )) -lt 90 ] || fail "not ready within 90 s"
  sleep 1
done
say "ready after $(( $(date +%s) - started )) s on 127.0.0.1:$PORT"
grep -q '"msg":"Service listening on' "$WORK/out.log" || fail "no banner log line"
# The AsyncAPI page's renderer comes from dist/assets/asyncapi (copied by the build; its package is
# a development dependency, pruned above).
for asset in asyncapi.js asyncapi.css; do
  curl -fsS -o /dev/null "http://127.0.0.1:$PORT/v1/asyncapi-ui/assets/$asset" || fail "GET /v1/asyncapi-ui/assets/$asset failed in the runtime tree"
done
[ ! -e "$APP/node_modules/@asyncapi/react-component" ] || fail "@asyncapi/react-component is still in the runtime tree"
say "the AsyncAPI page's files are served from dist/ without @asyncapi/react-component installed"

# SIGTERM to npm, as a supervisor or `docker stop` sends it to what it started.
kill -TERM "$PID"
waited=0
while kill -0 "$PID" 2>/dev/null; do
  [ "$waited" -lt 20 ] || fail "still running 20 s after SIGTERM"
  sleep 1
  waited=$((waited + 1))
done
wait "$PID" && code=0 || code=$?
PID=
[ "$code" -eq 0 ] || fail "exit code $code after SIGTERM (expected 0)"
grep -q '"signal":"SIGTERM"' "$WORK/out.log" || fail "the node process did not receive SIGTERM (no shutdown line)"
grep -q '"msg":"drained"' "$WORK/out.log" || fail "no drained line"
! curl -fsS "http://127.0.0.1:$PORT/v1/health" >/dev/null 2>&1 || fail "something still serves on port $PORT after the drain (an orphaned node?)"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
  const bad = lines.filter((line) => { try { return typeof JSON.parse(line) !== "object"; } catch { return true; } });
  if (bad.length) { console.error("not JSON on stdout:\n" + bad.slice(0, 5).join("\n")); process.exit(1); }
' "$WORK/out.log" || fail "stdout is not JSON only"
[ ! -s "$WORK/err.log" ] || { say "stderr:"; cat "$WORK/err.log" >&2; fail "the process wrote to stderr"; }
say "OK: production tree started with npm start (node dist/main.js), ready, drained on SIGTERM in ${waited} s, exit 0, stdout JSON only"
