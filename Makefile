# make demo: a fresh machine to a queried cluster, from the sample archives in samples/
# make test: the whole test suite, in the same virtual environment, on every core
# make test-quick: the suite without the tests that start real Hadoop or a Spark cluster
# make test-fast: the unit tests, in under a minute: no Java, Spark, Hadoop, browser or server
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test test-quick test-fast bench bench-zstd bench-serve clean clean-venv

$(BIN)/webarchive-index: setup.py webarchive_indexing/warc/_members.c webarchive_indexing/inputs/_linecheck.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	$(BIN)/webarchive-index --version
	touch $@

demo: $(BIN)/webarchive-index
	rm -rf demo-out
	$(BIN)/webarchive-index build samples/ -o demo-out --shards 4 --lines-per-block 10
	@echo
	@echo '$$ webarchive-index query demo-out "archive.org/images/*"'
	@$(BIN)/webarchive-index query demo-out 'archive.org/images/*'
	@echo
	@echo '$$ webarchive-index query demo-out "*.wikipedia.org" --limit 3'
	@$(BIN)/webarchive-index query demo-out '*.wikipedia.org' --limit 3
	@echo
	@echo '$$ webarchive-index copy check demo-out --domains wikipedia.org,archive.org/images/*'
	@$(BIN)/webarchive-index copy check demo-out --domains 'wikipedia.org,archive.org/images/*'

test: $(BIN)/webarchive-index
	$(BIN)/python -m pytest -q -n auto

test-quick: $(BIN)/webarchive-index
	$(BIN)/python -m pytest -q -n auto -m "not cluster"

test-fast: $(BIN)/webarchive-index
	$(BIN)/python -m pytest -q --fast

bench: $(BIN)/webarchive-index
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/run.py

bench-zstd: $(BIN)/webarchive-index
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/zstd.py

bench-serve: $(BIN)/webarchive-index
	$(BIN)/python bench/serve.py

clean:
	rm -rf demo-out bench/out

clean-venv:
	rm -rf $(VENV) build webarchive_indexing/warc/*.so
