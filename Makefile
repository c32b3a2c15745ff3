# The few commands people type. `make serve` and `make test` set everything up first.
.PHONY: install serve worker test lint

install: .venv/.installed

.venv/.installed: pyproject.toml scripts/install.sh
	bash scripts/install.sh
	touch $@

serve: install
	.venv/bin/cheapqa serve

worker: install
	.venv/bin/cheapqa worker

test: install
	bash scripts/test.sh

lint: install
	.venv/bin/ruff check encoder connections store service bench cli client tests
	.venv/bin/ruff format --check encoder connections store service bench cli client tests
	.venv/bin/mypy
