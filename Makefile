# graphmem: `make demo` runs the sample corpus through the store, `make test` runs every check.
# Both create .venv on first use and install what the project needs (torch first, from
# TORCH_INDEX when set: where pip's own index gives torch's CUDA build, run once with
# TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU build).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := graphmem ingest queries eval
TORCH_INDEX ?=
# pytest-xdist workers for `make test` (TEST_JOBS= runs the suite in one process)
TEST_JOBS ?= -n auto --dist loadfile

.PHONY: demo test test-faults lint typecheck bench clean notebook

# --no-compile: a module is compiled when first imported (its bytecode kept then), not
# every module of every package at install (torch's alone: 28 s against 10 s here).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m graphmem.demo --db graphmem.db

# JupyterLab (and ipywidgets, for progress bars in cells) in the project's .venv, opened on
# notebooks/: each notebook runs offline on the sample corpus and the committed results.
notebook: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt 'jupyterlab>=4.2' 'ipywidgets>=8.1'
	$(BIN)/jupyter lab --notebook-dir=notebooks

lint: $(STAMP)
	$(BIN)/ruff check $(PACKAGES) tests examples

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite on every core (pytest-xdist; each test file stays on one worker, so its
# module fixtures are built once), with its temporary directories in memory (/dev/shm
# when it has 4 GiB free, else the usual temporary directory; Kuzu's and PostgreSQL's
# fsyncs cost nothing in memory), removed after.
# The directory is opened to other users for the PostgreSQL server, which runs as one.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (into the ignored
# __pycache__ folders): else every process the tests start compiles graphmem again, and
# pytest rewrites the asserts of every test module and plugin again in each worker.
# mypy (about two minutes on a fresh clone) checks the packages while the tests run; its
# report follows theirs, and either failing fails the target.
test: lint
	@shm=$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}'); \
	if [ "$${shm:-0}" -ge 4194304 ]; then tmp=$$(mktemp -d -p /dev/shm graphmem-test.XXXXXX); \
	else tmp=$$(mktemp -d); fi && \
	chmod 755 "$$tmp" && trap 'rm -rf "$$tmp"' EXIT && \
	echo "$(BIN)/mypy (beside the tests)" && \
	{ $(BIN)/mypy > "$$tmp/mypy.txt" 2>&1 & } && typing=$$! && \
	echo "TMPDIR=$$tmp $(BIN)/python -m pytest -q -m 'not slow' $(TEST_JOBS) --durations=25" && \
	{ env -u PYTHONDONTWRITEBYTECODE TMPDIR="$$tmp" \
		$(BIN)/python -m pytest -q -m "not slow" $(TEST_JOBS) --durations=25; tests=$$?; } ; \
	wait $$typing; typed=$$?; echo "mypy:"; cat "$$tmp/mypy.txt"; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

# Every fault trial (20+ kill -9 per operation) and 300 hostile inputs per entry point,
# and the other `slow` tests (ranx itself recomputing the scores test_eval.py recorded).
test-faults: $(STAMP)
	GRAPHMEM_HOSTILE_EXAMPLES=300 $(BIN)/python -m pytest -q tests/faults tests/test_hostile.py \
		tests/test_forget_complete.py tests/test_trust_cypher_kuzu.py \
		tests/test_eval.py::test_the_recorded_ranx_scores_are_ranxs

clean:
	rm -rf $(VENV) graphmem.db .pytest_cache .mypy_cache .ruff_cache
