#!/bin/bash
# Makes one upgrade fixture with the release that wrote it: that commit's vault, started on a
# new database, is written to by write.mjs; the database is then dumped as text.
# usage (from the repository, PostgreSQL on 127.0.0.1:5432 for postgres):
#   core/src/db/upgrade-fixtures/make.sh COMMIT LABEL sqlite|postgres
# e.g. make.sh 3d9a2c1 0005_key_rotation sqlite; make.sh e9ce0e2 0008_activity_read_sets postgres
# The release needs its own dependencies: `npm ci` in the worktree (made under $TMPDIR).
set -eu
C=$1; L=$2; DB=$3
HERE=$(cd "$(dirname "$0")" && pwd); OUT=$HERE/$L; W=${TMPDIR:-/tmp}/vault-release-$C; D=$(mktemp -d); PORT=$((18000 + RANDOM % 1000))
[ -d "$W" ] || { git -C "$HERE" worktree add -q --detach "$W" "$C"; (cd "$W" && npm ci --silent); }
# The fixtures' key pair: the public key is here; the private key stays with whoever makes the
# fixtures, never in the repository (FIXTURE_PRIVATE_KEY names its file).
mkdir -p "$OUT"; cp "$HERE"/vault-public-key.pem "$D"/; cp "${FIXTURE_PRIVATE_KEY:?set FIXTURE_PRIVATE_KEY to the fixtures private key file}" "$D"/vault-private-key.pem
export VAULT_DATA_DIR=$D VAULT_ADMIN_API_KEY=admin-key-0123456789abcdef VAULT_INDEX_KEY=$(printf 0123456789abcdef0123456789abcdef | base64) \
  VAULT_PORT=$PORT VAULT_LOG_LEVEL=warn VAULT_RATE_LIMIT_MAX=0 VAULT_ENCRYPTION_PUBLIC_KEY=$(base64 -w0 "$HERE"/vault-public-key.pem)
if [ "$DB" = postgres ]; then N=vault_fixture_$C; psql -q -h 127.0.0.1 -U postgres -c "drop database if exists $N" -c "create database $N"; export VAULT_DB=postgres://postgres@127.0.0.1:5432/$N; fi
(cd "$W" && exec node --import tsx core/src/main.ts > "$D"/vault.log 2>&1) & P=$!
for i in $(seq 1 120); do curl -s -o /dev/null http://127.0.0.1:$PORT/ && break; sleep 0.5; done
node "$HERE"/write.mjs http://127.0.0.1:$PORT "$VAULT_ADMIN_API_KEY" "$D" "$OUT/$DB.json" || { kill $P; exit 1; }
kill $P; wait $P || true
if [ "$DB" = postgres ]; then
  # \restrict is psql's; the test loads the dump through pg.
  pg_dump --inserts --no-owner --no-privileges --no-comments -h 127.0.0.1 -U postgres "$N" | grep -v '^\\\(un\)\?restrict' > "$OUT/postgres.sql"
  psql -q -h 127.0.0.1 -U postgres -c "drop database $N"
else
  sqlite3 "$D"/vault.db .dump > "$OUT/sqlite.sql"
fi
rm -rf "$D"
