#!/usr/bin/env bash
# Runs the whole test suite. Redis tests use CHEAPQA_TEST_REDIS_URL (its database is flushed),
# else a redis-server the tests start themselves (see tests/redis_server.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q "$@"
