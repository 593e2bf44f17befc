#!/bin/sh
# One image, three roles: the first argument selects which built entry point runs.
# Each command is exactly the package.json script of that role (start:api, start:worker,
# migrate); test/deploy/image.spec.ts keeps them equal and runs this file outside Docker.
# `exec` makes node PID 1, so SIGTERM from Docker or the kubelet reaches the app's own
# shutdown hooks (the worker drains its jobs) instead of stopping at a shell.
set -eu
cd "$(dirname "$0")/.."
role="${1:-api}"
case "$role" in
  api) exec node dist/apps/api/src/main.js ;;
  worker) exec node dist/apps/worker/src/main.js ;;
  migrate) exec node dist/libs/database/src/migrate.main.js ;;
  *)
    echo "usage: entrypoint.sh api|worker|migrate (got: $role)" >&2
    exit 64
    ;;
esac
