#!/usr/bin/env bash
# make scale-db: keb's PostgreSQL side at SCALE_N instances (see the Makefile's
# help and testing/scaledb). Everything it builds and writes goes under
# .keb/scale-db; the database it creates is dropped on exit.
set -euo pipefail
N=${SCALE_N:-100000}
N=${N##*,} # a list (make scale's): its last value
ADMIN=${SCALE_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
BEFORE=${SCALE_BEFORE:-}
DOC=${SCALE_DOC:-docs/performance.md}
GO=${GO:-go}
DIR=.keb/scale-db
DB=keb_scale_db
start=$(date +%s)
rm -rf "$DIR" && mkdir -p "$DIR"
echo ">> building keb, testing/scaledb, testing/runtimesload and testing/cleanupload into $DIR"
$GO build -o "$DIR/keb" ./cmd/keb
$GO build -o "$DIR/scaledb" ./testing/scaledb
$GO build -o "$DIR/runtimesload" ./testing/runtimesload
$GO build -o "$DIR/cleanupload" ./testing/cleanupload
results=()
if [ -n "$BEFORE" ]; then
	echo ">> building $BEFORE (keb and this testing/scaledb against its packages) into $DIR/before"
	mkdir -p "$DIR/before/src"
	git archive "$BEFORE" | tar -x -C "$DIR/before/src"
	rm -rf "$DIR/before/src/testing/scaledb" && cp -r testing/scaledb "$DIR/before/src/testing/scaledb"
	(cd "$DIR/before/src" && $GO build -o ../keb ./cmd/keb && $GO build -o ../scaledb ./testing/scaledb)
fi
URL=$("$DIR/scaledb" -admin-url "$ADMIN" -create-db "$DB")
trap '"$DIR/scaledb" -admin-url "$ADMIN" -drop-db "$DB" || true' EXIT
# The schema each keb measured needs: the previous commit's first (its
# migrations), this tree's after its run.
if [ -n "$BEFORE" ]; then
	"$DIR/before/keb" migrate up --database-url "$URL"
else
	"$DIR/keb" migrate up --database-url "$URL"
fi
echo ">> loading $N instances"
"$DIR/runtimesload" -load "$N" -database-url "$URL" | tee "$DIR/load.txt"
if [ -n "$BEFORE" ]; then
	echo ">> measuring $BEFORE"
	"$DIR/before/scaledb" -database-url "$URL" -label "before ($BEFORE)" -keb "$DIR/before/keb" -out "$DIR/before.json"
	results+=("$DIR/before.json")
fi
"$DIR/keb" migrate up --database-url "$URL"
"$DIR/scaledb" -database-url "$URL" -vacuum
echo ">> measuring this tree, then the fleet jobs"
"$DIR/scaledb" -database-url "$URL" -label after -keb "$DIR/keb" -jobs -out "$DIR/after.json"
results+=("$DIR/after.json")
events=$((N / 10))
echo ">> subaccount cleanup: $events delete events"
"$DIR/cleanupload" -database-url "$URL" -events "$events" -pages $(((events + 99) / 100)) | tee "$DIR/cleanup.txt"
{
	echo "Load (\`testing/runtimesload -load $N\`): \`$(cat "$DIR/load.txt")\`."
	echo
	echo "Subaccount cleanup (\`testing/cleanupload -events $events\`, one pass of the real cleaner over the loaded database, after the runs above):"
	echo
	echo '```'
	cat "$DIR/cleanup.txt"
	echo '```'
	echo
	echo "\`make scale-db\` took $(( $(date +%s) - start )) s."
} > "$DIR/extra.md"
"$DIR/scaledb" -doc "$DOC" -commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -dirty)" \
	-extra "$DIR/extra.md" "${results[@]}"
echo ">> wrote the fleet-scale section of $DOC"
