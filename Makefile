# The Transformer, Interactive. `make book` builds the site into _build/html; `make test` runs every check.
# Sized for 2 cores: JOBS pytest workers (notebooks are kept whole per worker with --dist loadfile).

PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
JUPYTER_BOOK ?= jupyter-book
JOBS ?= 2
TORCH_VERSION ?= 2.13.0
# Marks the static build: transformer_book.viz writes figures as plain text/html and live_only() explorers as notes.
# (book/_ext/offline_assets.py sets it too, so a bare `jupyter-book build .` behaves the same.)
STATIC := TRANSFORMER_BOOK_STATIC=1
SETUP_STAMP := _build/.setup-stamp
NBVAL := $(PYTHON) -m pytest --nbval-lax --nbval-current-env --nbval-cell-timeout=300 \
	--nbval-sanitize-with tests/nbval_sanitize.cfg -n $(JOBS) --dist loadfile

.PHONY: help setup vendor book clean clean-all lint test nbval nbval-perturbed browser-test refresh

help:
	@echo "make setup         install torch $(TORCH_VERSION) (when no torch), requirements.txt, the package, chromium"
	@echo "make vendor        fetch the book's offline JavaScript (MathJax, RequireJS, d3, jQuery) into book/_vendor"
	@echo "make book          setup + vendor + execute and build the book into _build/html (-W: warnings fail)"
	@echo "make lint          ruff check (the package, tests, benchmarks, scripts and the notebooks)"
	@echo "make nbval         run every notebook live; compare cells tagged nbval-check-output"
	@echo "make nbval-perturbed   nbval again with the CPU's vector instructions one level down (AVX-512 -> AVX2 -> none)"
	@echo "make test          lint + book + pytest tests (browser test included) + nbval + nbval-perturbed"
	@echo "make refresh NB='book/04_masks.ipynb ...'   re-execute notebooks, keep only checked outputs"
	@echo "make clean         remove _build (and the jupyter-cache in it); clean-all also removes book/_vendor"

setup: $(SETUP_STAMP)

# Re-run when the requirements change; quick and idempotent when everything is installed already.
$(SETUP_STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PIP) install "torch==$(TORCH_VERSION)"
	$(PIP) install -q -r requirements.txt
	$(PIP) install -q -e .
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		elif [ -n "$$CI" ]; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium; \
		else echo "setup: chromium is missing; the browser test needs it (sudo apt-get install chromium)" >&2; fi; }
	@mkdir -p $(dir $@) && touch $@

vendor:
	bash scripts/vendor_assets.sh

book: setup vendor
	$(STATIC) $(JUPYTER_BOOK) build . -W -n --keep-going

clean:
	rm -rf _build
	find book -name .ipynb_checkpoints -type d -prune -exec rm -rf {} +

clean-all: clean
	rm -rf book/_vendor

lint:
	$(PYTHON) -m ruff check transformer transformer_book tests benchmarks scripts book

nbval: setup
	env -u TRANSFORMER_BOOK_STATIC $(NBVAL) book/

# The guard against checked outputs and asserts that hold on one machine only (a digit that rounds the other way on
# an AVX2 laptop or a GPU). CI has one CPU and no GPU, so it runs nbval again with the low-order bits of every
# computation changed: PyTorch's own kernels (ATEN_CPU_CAPABILITY), MKL's matrix products (MKL_ENABLE_INSTRUCTIONS) and oneDNN's
# (ONEDNN_MAX_CPU_ISA) use the vector instructions one level below this CPU's (AVX-512 -> AVX2, AVX2 -> none), so
# sums are split and rounded differently, as on another machine; every checked output must survive it. (The chapters
# pin torch.set_num_threads(1), and training pins its own thread count, so a thread-count change would not reach them.)
nbval-perturbed: setup
	@native=$$($(PYTHON) -c "import torch; print(torch.backends.cpu.get_cpu_capability())"); \
	if [ "$$native" = AVX512 ]; then set -- avx2 AVX2 AVX2; else set -- default SSE4_2 SSE41; fi; \
	echo "nbval-perturbed: this CPU runs PyTorch with $$native; running the notebooks with $$1 instead"; \
	env -u TRANSFORMER_BOOK_STATIC ATEN_CPU_CAPABILITY=$$1 MKL_ENABLE_INSTRUCTIONS=$$2 ONEDNN_MAX_CPU_ISA=$$3 \
		$(NBVAL) book/

browser-test:
	$(PYTHON) -m pytest tests/test_book_browser.py

test: lint book
	$(PYTHON) -m pytest tests -n $(JOBS) --dist loadfile
	$(MAKE) --no-print-directory nbval
	$(MAKE) --no-print-directory nbval-perturbed

refresh: setup
	$(PYTHON) scripts/refresh_notebooks.py $(NB)
