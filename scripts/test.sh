#!/usr/bin/env bash
# Runs the whole test suite. Redis tests use CHEAPQA_TEST_REDIS_URL, else 127.0.0.1:6379,
# else a redis-server the tests start themselves (see tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q "$@"
