#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries (initdb, postgres) are installed for the tests that run
# the behaviour suites against a real PostgreSQL (tests/conftest.py starts one per test session
# in a temporary directory, on a free loopback port, as `nobody` when run as root, and stops it).
# Idempotent and quiet: nothing happens when initdb is already on PATH or under
# /usr/lib/postgresql/*/bin. Otherwise, as root with apt-get, installs Debian's `postgresql`
# package without creating or starting its own cluster.
#
#   scripts/setup-postgres.sh      (make test calls it)
set -euo pipefail

have_initdb() {
  command -v initdb >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

have_initdb && exit 0

if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "setup-postgres: installing Debian's postgresql for the PostgreSQL test suites (apt-get)" >&2
  apt-get update -qq >/dev/null
  # no cluster of its own: the tests run initdb in a temporary directory
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/flightlog-tests.conf
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  have_initdb && exit 0
fi
echo "setup-postgres: PostgreSQL's initdb is missing: install PostgreSQL 13 or newer (sudo apt-get install postgresql)" >&2
echo "                the tests that run against PostgreSQL will fail until it is there" >&2
exit 1
