# The Transformer, Interactive. `make book` builds the site into _build/html; `make test` runs every check.
# Sized for 2 cores: JOBS pytest workers (notebooks are kept whole per worker with --dist loadfile).

# Everything runs in a virtual environment: the active one (VIRTUAL_ENV set), else the repository's own .venv, which
# `make setup` creates with BOOTSTRAP_PYTHON (Python >= 3.11, which the theme needs; on Debian/Ubuntu it needs apt's python3-venv).
# So the system Python is never installed into (PEP 668). Its bin/ goes first on the PATH for every recipe, so
# jupyter-book, pytest's subprocesses and the notebooks' python3 kernel are that environment's.
BOOTSTRAP_PYTHON ?= python3
REPO_VENV_PYTHON := $(CURDIR)/.venv/bin/python
VENV ?= $(if $(VIRTUAL_ENV),$(VIRTUAL_ENV),$(CURDIR)/.venv)
PYTHON ?= $(VENV)/bin/python
export VIRTUAL_ENV := $(VENV)
export PATH := $(VENV)/bin:$(PATH)
PIP ?= $(PYTHON) -m pip
# constraints.txt pins every package the build depends on (`make lock` refreshes it); pyproject.toml's extras say what
# we need, with the few pins we choose ourselves (the book's theme), which constraints.txt leaves to them;
# requirements.txt installs the package with those extras.
PIP_INSTALL = $(PIP) install -q -c constraints.txt
JUPYTER_BOOK ?= jupyter-book
JOBS ?= 2
TORCH_VERSION ?= 2.13.0
# Marks the static build: transformer_book.viz writes figures as plain text/html and live_only() explorers as notes.
# (book/_ext/static_book sets it too, so a bare `jupyter-book build .` behaves the same.)
STATIC := TRANSFORMER_BOOK_STATIC=1
SETUP_STAMP := _build/.setup-stamp
PACKAGES_STAMP := _build/.packages-stamp
TOOLS_STAMP := _build/.tools-stamp
# Debian packages (each named as its command) that make setup installs with apt when they are missing.
APT_TOOLS := chromium npm
# ...and a font with Chinese characters, when the system has none, for the Chinese edition's pages in the browser tests
# (readers' systems have their own: book.css names them).
CJK_FONTS := fonts-noto-cjk
# nbval compares the cells tagged nbval-check-output with their committed outputs (the sanitizers cover ids and
# addresses); tests/nbval_kernels.py gives each kernel Unix sockets instead of TCP ports, which two kernels starting at
# once can collide on. The workers take the notebooks in the order given, not pytest-xdist's own (the notebooks with
# the most cells first, which started the longest, chapters 7a and 14, near the end while the other worker ran out of
# work): LONGEST first (chapter 7a's training studies, 10's training, 14's training and exports: each about 100 s of
# the English run, benchmarks/results/ci.md; 15's eight small runs, about 80 s), then the rest, the last page first
# (scripts/book_toc.py).
LONGEST := 07a_making_it_train 10_translation 14_playground 15_gpt_and_bert
NBVAL := $(PYTHON) -m pytest -p tests.nbval_kernels -p tests.nbval_record --nbval-lax --nbval-cell-timeout=300 \
	--nbval-sanitize-with tests/nbval_sanitize.cfg -n $(JOBS) --dist loadfile --no-loadscope-reorder
# The reader's environment: made by scripts/reader_env.py from the README's local path (a fresh venv, the pip lines
# verbatim), its kernel registered inside it as READER_KERNEL, which a client finds through JUPYTER_PATH.
READER_VENV ?= $(CURDIR)/_build/reader-venv
READER_KERNEL := transformer-reader
READER := VIRTUAL_ENV=$(READER_VENV) PATH=$(READER_VENV)/bin:$$PATH JUPYTER_PATH=$(READER_VENV)/share/jupyter \
	TRANSFORMER_BOOK_READER_PYTHON=$(READER_VENV)/bin/python
# The CPU's vector instructions one level below this one's (AVX-512 -> AVX2, AVX2 -> none), for PyTorch's own kernels
# (ATEN_CPU_CAPABILITY), MKL's matrix products and oneDNN's: sums are split and rounded differently, as on another
# machine, so a checked output or an assert that holds on one machine only fails here. (The chapters pin
# torch.set_num_threads(1), and training its own thread count, so a thread-count change would not reach them.)
PERTURBED_CPU = native=$$($(PYTHON) -c "import torch; print(torch.backends.cpu.get_cpu_capability())"); \
	if [ "$$native" = AVX512 ]; then set -- avx2 AVX2 AVX2; else set -- default SSE4_2 SSE41; fi; \
	echo "this CPU runs PyTorch with $$native; the notebooks run with $$1 instead"; \
	export ATEN_CPU_CAPABILITY=$$1 MKL_ENABLE_INSTRUCTIONS=$$2 ONEDNN_MAX_CPU_ISA=$$3

.PHONY: help setup lock sync-url vendor book book-en book-zh clean clean-all lint format check test nbval reader-env nbval-reader browser-test lab-test \
	colab-env nbval-colab colab-core-test colab-test refresh

help:
	@echo "What readers and contributors run:"
	@echo "  make book        set everything up and build the book, both editions, into _build/html (open index.html)"
	@echo "  make test        every check: make check, every chapter of both editions, both books built from those runs,"
	@echo "                   then the book kit's tests, the built sites in a browser, JupyterLab and the classic Notebook"
	@echo "  make check       lint + the core's and the wing's torch-only tests, without the slow ones: under two minutes"
	@echo "  make refresh NB='book/04_masks.ipynb zh/book/04_masks.ipynb'   after editing a chapter: fold its say cells,"
	@echo "                   re-execute it, keep only checked outputs and say cells' paragraphs (no NB: every notebook)"
	@echo "  make format      rewrite the Python files as ruff format writes them (and sort their imports)"
	@echo "  make clean       remove _build (and the jupyter-cache in it); clean-all also removes book/_vendor"
	@echo ""
	@echo "What they are made of (make test runs them in this order; each also runs alone):"
	@echo "  make setup       create .venv (unless a virtual environment is active), install torch $(TORCH_VERSION) (when"
	@echo "                   no torch), the package with its extras (requirements.txt) under constraints.txt, chromium, npm"
	@echo "  make lint        ruff check (the package, tests, benchmarks, scripts and the notebooks), ruff format --check"
	@echo "                   (the Python files), actionlint"
	@echo "  make reader-env  _build/reader-venv as README.md's local path says (only torch, pip install -e .[lab])"
	@echo "  make vendor      fetch the book's offline JavaScript (MathJax, RequireJS, d3, jQuery, ONNX Runtime Web)"
	@echo "  make nbval-reader  every chapter in a live kernel of the reader's environment, with the CPU's vector"
	@echo "                   instructions one level down; compare checked outputs; record them in _build/recorded"
	@echo "  make colab-env   _build/colab-venv: Colab's Python and packages (tests/colab/, a dated copy of Colab's list),"
	@echo "                   then the chapters' first cell, which must install the package without moving any of them"
	@echo "  make nbval-colab every chapter of the Chinese edition in that environment, as on Colab; compare checked"
	@echo "                   outputs; record them in _build/recorded-zh (on the models nbval-reader trained)"
	@echo "  make colab-core-test  make check's tests of the core and the training wing at Colab's Python and torch"
	@echo "  make lab-test    the chapters' live explorers in JupyterLab, from the reader's environment"
	@echo "  make colab-test  the explorers in the classic Notebook 6.5 with ipywidgets 7.7, from the Colab-like one"
	@echo "  make browser-test  the built books in headless Chromium"
	@echo ""
	@echo "Now and then:"
	@echo "  make nbval       every notebook live in this environment; compare cells tagged nbval-check-output"
	@echo "  make lock        re-resolve pyproject's extras in a fresh LOCK_PYTHON environment, rewrite constraints.txt"
	@echo "  make sync-url    copy repository.url of _config.yml into the notebooks' install lines and the README"

setup: $(SETUP_STAMP)

# The Python packages and the system's tools, which `make --jobs` installs side by side (pip and apt each wait on
# downloads and the disk, and apt on one core).
$(SETUP_STAMP): $(PACKAGES_STAMP) $(TOOLS_STAMP)
	@touch $@

# Re-run when the requirements change; quick and idempotent when everything is installed already. bertviz comes
# without its declared dependencies, as with every install of the live extra (pyproject.toml says why).
$(PACKAGES_STAMP): requirements.txt constraints.txt pyproject.toml | $(filter $(REPO_VENV_PYTHON),$(PYTHON))
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP_INSTALL) -r requirements.txt
	$(PIP_INSTALL) --no-deps "bertviz>=1.4"
	@mkdir -p $(dir $@) && touch $@

$(TOOLS_STAMP):
	@missing=; for tool in $(APT_TOOLS); do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	fc-list :lang=zh family 2>/dev/null | grep -q . || missing="$$missing $(CJK_FONTS)"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
		elif [ -n "$$CI" ]; then sudo apt-get update -qq && sudo apt-get install -y -qq $$missing; \
		else echo "setup: missing$$missing (make vendor needs npm, the browser tests chromium and a Chinese font): sudo apt-get install$$missing" >&2; \
			exit 0; fi; fi; \
	mkdir -p $(dir $@) && touch $@

$(REPO_VENV_PYTHON):
	$(BOOTSTRAP_PYTHON) -m venv $(CURDIR)/.venv

# Resolve pyproject's extras afresh (no constraints) in a throw-away environment and freeze them into constraints.txt:
# requirements.txt's, and the reader's JupyterLab (the lab extra, which the README's local path installs).
# With the oldest Python the book builds on (sphinx-book-theme 1.3 needs 3.11; Debian 12 has 3.11.2): newer releases
# of some packages need a newer Python than a machine may have, never the other way round.
LOCK_PYTHON ?= python3.11
lock:
	rm -rf _build/lock-venv && $(LOCK_PYTHON) -m venv _build/lock-venv
	_build/lock-venv/bin/python -m pip install -q "torch==$(TORCH_VERSION)" -r requirements.txt -e ".[lab]"
	_build/lock-venv/bin/python -m pip install -q --no-deps "bertviz>=1.4"
	_build/lock-venv/bin/python scripts/lock_constraints.py > constraints.txt
	rm -rf _build/lock-venv

vendor:
	bash scripts/vendor_assets.sh

# The notebooks run JOBS at a time into the build's jupyter-cache first (myst-nb runs them one after another); the
# build then finds them cached. Both in the static build's environment. Notebooks that make nbval-reader recorded
# (_build/recorded) go into the cache as they are instead: make test builds the book from its one run of them.
# The Chinese edition (zh/: the same code, Chinese prose and words) the same way, built into _build/zh/_build and
# published under zh/ of the site (its chapters' outputs from make nbval-colab's recording, where there is one). Its
# pages load the English site's vendored assets (../_static/vendor/ from zh/): the site holds one copy, and the Chinese
# build none (book/_ext/static_book/vendor.py).
# Each edition builds alone too (book-en, book-zh): make test builds the English one while the Chinese chapters run.
ZH_BUILD := _build/zh/_build
book: book-en book-zh

book-en: setup vendor
	$(STATIC) $(PYTHON) scripts/execute_notebooks.py --jobs $(JOBS)
	$(STATIC) $(JUPYTER_BOOK) build . -W -n --keep-going

book-zh: setup vendor
	$(STATIC) $(PYTHON) scripts/execute_notebooks.py --jobs $(JOBS) --edition zh
	$(STATIC) $(JUPYTER_BOOK) build zh --path-output _build/zh -W -n --keep-going
	rm -rf _build/html/zh && mkdir -p _build/html && cp -r $(ZH_BUILD)/html _build/html/zh

clean:
	rm -rf _build
	find book zh -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

clean-all: clean
	rm -rf book/_vendor

# The Python files as `ruff format` writes them (pyproject.toml: 120 columns; the notebooks are left as written).
FORMATTED := transformer transformer_book tests benchmarks scripts book/_ext

lint: setup
	$(PYTHON) -m ruff check transformer transformer_book tests benchmarks scripts book zh
	$(PYTHON) -m ruff format --check $(FORMATTED)
	actionlint .github/workflows/*.yml

format: setup
	$(PYTHON) -m ruff format $(FORMATTED)
	$(PYTHON) -m ruff check --fix-only $(FORMATTED)

# The quick loop while changing the package: what needs only torch, minus training runs, compiling and subprocesses.
check: lint
	$(PYTHON) -m pytest tests/core tests/train -m "core and not slow" -q -n $(JOBS)

# Rewrite the copies of the repository's address (notebooks' install lines, README) from _config.yml.
sync-url:
	$(PYTHON) scripts/sync_repository_url.py

# The runs the chapters train (transformer_book.runs: a later chapter loads the model an earlier one trained with the
# same settings, and a study's results that kept() computed) go to a folder of each notebook run's own, made afresh:
# within a run each model trains once, and no run reuses what a reader's own runs keep in ~/.cache. One exception
# spares make test about 180 s of training, nearly half of the Chinese run's: the Chinese chapters at Colab's versions
# (make nbval-colab) load the runs that the English chapters trained in the reader's environment (make nbval-reader,
# which make test runs first; alone, whatever it last left) wherever their settings match, the package's source among
# them, though another PyTorch and other CPU instructions trained them (TRANSFORMER_BOOK_RUNS_FROM). The trade: the
# Chinese pages show the English pages' trained models and numbers (the message above each says which PyTorch trained
# it), chapter 7a's studies among them, and that these models train at Colab's versions is taken from what does train
# there: chapter 7 trains its model again (retrain=True); the runs chapters 11 and 15 record as they train, chapter
# 12's pitfalls and every model trained without transformer_book.runs; and make colab-core-test, whose quick tests
# train every task briefly. Each edition's checked outputs and asserts are checked on what it shows.
RUNS := $(CURDIR)/_build/runs

nbval: setup
	rm -rf $(RUNS)/nbval
	env -u TRANSFORMER_BOOK_STATIC TRANSFORMER_BOOK_RUNS=$(RUNS)/nbval $(NBVAL) --nbval-current-env $$($(PYTHON) scripts/book_toc.py . --last-first --first $(LONGEST))

# Made again only when the README's commands, pyproject.toml or constraints.txt change (the script checks). For any
# check that must run where a reader runs: $(READER_VENV)/bin/jupyter lab serves the chapters with that kernel, as
# tests/notebooks/test_jupyterlab.py does (make lab-test; make test runs it with the other book tests).
reader-env:
	$(BOOTSTRAP_PYTHON) scripts/reader_env.py $(READER_VENV)

# The chapters as a reader runs them: each in a live kernel of the reader's environment (nbval and pytest stay in this
# one), with another CPU's rounding; and the chapters' first cells, whose check must find in that environment
# everything each chapter needs. The run records what the static book shows (tests/nbval_record.py): each notebook
# that passes goes to RECORDED, the playground's exports where the build wants them, and `make book` then builds
# the site from them instead of executing the chapters again (scripts/execute_notebooks.py). The one run of the
# notebooks in `make test`.
RECORDED := $(CURDIR)/_build/recorded
nbval-reader: setup reader-env
	rm -rf $(RECORDED) $(RUNS)/reader
	@$(PERTURBED_CPU); \
	env -u TRANSFORMER_BOOK_STATIC $(READER) TRANSFORMER_BOOK_RECORD=$(RECORDED) TRANSFORMER_BOOK_RUNS=$(RUNS)/reader \
		TRANSFORMER_BOOK_PLAYGROUND=$(CURDIR)/_build/html/_static/playground \
		$(NBVAL) --nbval-kernel-name $(READER_KERNEL) $$($(PYTHON) scripts/book_toc.py . --last-first --first $(LONGEST)) \
		tests/notebooks/test_first_cells.py

browser-test:
	$(PYTHON) -m pytest tests/site/test_book_browser.py tests/site/test_book_navigation.py tests/site/test_playground_browser.py

# Colab at the versions it ships (scripts/colab_env.py says how the environment is made; python
# scripts/colab_packages.py refreshes tests/colab/ from Colab's published list). The chapters then run in its kernel,
# which sets COLAB_RELEASE_TAG as Colab does, at this CPU's own vector instructions.
COLAB_VENV ?= $(CURDIR)/_build/colab-venv
COLAB := JUPYTER_PATH=$(COLAB_VENV)/share/jupyter
colab-env: setup
	$(PYTHON) scripts/colab_env.py $(COLAB_VENV)

# The chapters that run here are the Chinese edition's (the English chapters' code, which make nbval-reader runs),
# each a missing translation away from failing; the run records them for the Chinese book, as nbval-reader does for
# the English: so every chapter's code runs twice in make test, once per edition, each at one end of what is supported.
RECORDED_ZH := $(CURDIR)/_build/recorded-zh
nbval-colab: colab-env
	rm -rf $(RECORDED_ZH) $(RUNS)/colab
	env -u TRANSFORMER_BOOK_STATIC $(COLAB) TRANSFORMER_BOOK_RECORD=$(RECORDED_ZH) TRANSFORMER_BOOK_STRICT_LANGUAGE=1 \
		TRANSFORMER_BOOK_RUNS=$(RUNS)/colab TRANSFORMER_BOOK_RUNS_FROM=$(RUNS)/reader \
		TRANSFORMER_BOOK_PLAYGROUND=$(CURDIR)/$(ZH_BUILD)/html/_static/playground \
		$(NBVAL) --nbval-kernel-name transformer-colab $$($(PYTHON) scripts/book_toc.py zh --last-first --first $(LONGEST))

# The core's and the training wing's quick tests (make check's) at Colab's versions of Python and torch: the Chinese
# chapters load most of the models the English ones trained (RUNS), and these train every task's small model there.
# pytest comes at Colab's version (its list has it) and hypothesis at ours, into a folder beside the environment that
# only this command puts on the path: the environment itself stays as Colab ships it.
COLAB_TEST_TOOLS := $(CURDIR)/_build/colab-test-tools
colab-core-test: colab-env
	@pins="$$(grep -ihE '^(pytest|pluggy|iniconfig)==' tests/colab/pip-freeze.txt | tr '\n' ' ')$$(grep -ihE \
		'^(hypothesis|sortedcontainers)==' constraints.txt | tr '\n' ' ')"; \
	if [ "$$(cat $(COLAB_TEST_TOOLS)/.pins 2>/dev/null)" != "$$pins" ]; then rm -rf $(COLAB_TEST_TOOLS) && \
		$(COLAB_VENV)/bin/python -m pip install -q --no-deps --target $(COLAB_TEST_TOOLS) $$pins && \
		echo "$$pins" > $(COLAB_TEST_TOOLS)/.pins; fi
	PYTHONPATH=$(COLAB_TEST_TOOLS) $(COLAB_VENV)/bin/python -m pytest tests/core tests/train -m "core and not slow" -q

# The explorers in the classic Notebook 6.5 with ipywidgets 7.7, from that environment: the open front end closest to
# Colab's (tests/notebooks/test_notebook_classic.py says why and how).
COLAB_TEST := tests/notebooks/test_notebook_classic.py
colab-test: colab-env
	TRANSFORMER_BOOK_COLAB_VENV=$(COLAB_VENV) $(PYTHON) -m pytest $(COLAB_TEST)

lab-test: setup reader-env
	TRANSFORMER_BOOK_READER_VENV=$(READER_VENV) $(PYTHON) -m pytest tests/notebooks/test_jupyterlab.py

# `make check` first (lint, the quick core tests; the reader's environment is made meanwhile: pip mostly waits on the
# disk and the network), then the chapters, once, in that environment, which also gives the static book its outputs
# (the book's JavaScript is fetched meanwhile, and the Colab-like environment made: it mostly waits on pip's downloads
# and the disk; each target's output is printed when it ends); then the Chinese chapters at Colab's versions, on the
# models the English chapters trained (RUNS says why), which give the Chinese book its outputs, while the English book
# is built (the two kernels leave a core idle now and then, above all as the last chapters end); the Chinese book
# built (Sphinx uses one core) while the quick tests run at Colab's versions; then every other test: the slow core
# ones and the book's (among them the built sites in a browser, the explorers in JupyterLab, which runs from the
# reader's environment, and in the classic Notebook from the Colab-like one). That last stage hands out modules whole,
# but for the browser's page checks, one test at a time (--dist loadscope: tests/conftest.py says why).
test:
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target check reader-env
	$(MAKE) --no-print-directory --jobs=3 --output-sync=target vendor nbval-reader colab-env
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target nbval-colab book-en
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target book-zh colab-core-test
	rm -rf $(RUNS)/tests
	TRANSFORMER_BOOK_READER_VENV=$(READER_VENV) TRANSFORMER_BOOK_COLAB_VENV=$(COLAB_VENV) TRANSFORMER_BOOK_RUNS=$(RUNS)/tests \
		$(PYTHON) -m pytest tests -m "not core or slow" -n $(JOBS) --dist loadscope

refresh: setup
	$(PYTHON) scripts/refresh_notebooks.py $(NB)
