# `make test` builds every binding and runs every language's tests. It installs what it needs
# itself (a Python venv, npm packages from the lockfile, the MSRV toolchain); CI calls exactly this.
.PHONY: test test-lint test-doc test-msrv test-rust cli-bin test-python test-node test-ffi ffi-bindings bench bench-node

CARGO ?= cargo
TARGET_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)

# The stages of `make test`, run one after another by scripts/timed, which prints how long each
# took at the end (also in target/stage-times.txt). `make <stage>` runs one alone.
TEST_STAGES := test-lint test-doc test-msrv test-rust test-python test-node test-cli test-serve test-ffi
test:
	@MAKE="$(MAKE)" scripts/timed $(TEST_STAGES)

# The house stays tidy without anyone asking: formatting, every clippy warning an error in
# every crate and target, and the core compiled without its default SQLite backend. One clippy
# run covers the PostgreSQL backend too: the CLI and the bindings turn it on, and the workspace's
# features are unified. The build without SQLite is a `check`: it is there to prove the core
# compiles so, and checking shares nothing with a debug build anyway (its features differ).
# Last, that workspace-hack still gives the builds of `make test` one feature set to share.
test-lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings
	$(CARGO) check --quiet -p handoff-core --no-default-features
	scripts/check-workspace-hack

# Every crate's documentation builds without a warning (broken or private links, bad code
# blocks): it is what docs.rs and `cargo doc` show a user.
test-doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --quiet

# The published crates compile with the oldest Rust they declare (`rust-version` in Cargo.toml),
# so the declaration stays true: handoff-core with every feature a user can turn on, the
# `handoff` command, and the examples a user copies. The bindings and benches are not published
# and declare no rust-version (pyo3, napi and uniffi state their own): checking them here cost
# 70 more crates on a toolchain that shares nothing with the other stages. rustup installs that
# toolchain the first time (a minimal profile, about 70 MB). Where the distribution server cannot
# be reached, the stage says so loudly and goes on: the network is not the code, and every other
# stage still has to pass.
MSRV := $(shell sed -n 's/^rust-version *= *"\(.*\)"/\1/p' Cargo.toml)
MSRV_CHECK := check --quiet -p handoff-core -p handoff-cli -p handoff-examples --all-features --lib --bins --examples
test-msrv:
	@test -n "$(MSRV)" || { echo "no rust-version in Cargo.toml"; exit 1; }
	@if rustup toolchain list | grep -q '^$(MSRV)' || rustup toolchain install $(MSRV) --profile minimal; then \
	  echo "cargo +$(MSRV) $(MSRV_CHECK)"; cargo +$(MSRV) $(MSRV_CHECK); \
	else echo "WARNING: Rust $(MSRV) could not be installed (no route to the Rust distribution server?): the MSRV check did not run"; fi

# The packages whose Rust tests run together, in one build: the default members (the core, its
# benches and examples: what `cargo run --example quickstart` compiles is only the embedded
# default) and the CLI, with its `otlp` export (tests/otlp.rs sends spans to a collector).
# Every cargo call of the stage selects the same ones, so that features unify alike and
# nothing is compiled twice.
RUST_PACKAGES := -p handoff-core -p handoff-benches -p handoff-examples -p handoff-cli \
  --features handoff-core/postgres,handoff-cli/otlp
RUST_TESTS := $(CARGO) test $(RUST_PACKAGES) --all-targets
# The `handoff` binary as the workspace's tests build it: a plain `cargo build -p handoff-cli`
# leaves out features that only dev-dependencies turn on (num-traits' and bitflags' `std`), which
# changes chrono and rusqlite and so rebuilds the core and the CLI a second time (a minute here).
CLI_BIN := $(TARGET_DIR)/debug/handoff
cli-bin:
	$(RUST_TESTS) --no-run --quiet

# The PostgreSQL cases run in the one workspace run (they read HANDOFF_TEST_POSTGRES, which
# .ci/run sets). The restart test restarts the server (HANDOFF_TEST_POSTGRES_RESTART, also set
# by .ci/run), which breaks any PostgreSQL test running meanwhile: it is #[ignore]d there and
# runs here alone, after all the others, selected from the workspace as above (with `-p
# handoff-core` alone the dependencies' features differ and 30 crates, the core among them,
# would be compiled again).
test-rust: pgbouncer chromium
	@test -n "$$HANDOFF_TEST_POSTGRES" || echo "HANDOFF_TEST_POSTGRES is not set: the PostgreSQL cases are skipped (.ci/run sets it)"
	$(RUST_TESTS)
	$(CARGO) test $(RUST_PACKAGES) --doc
	$(CARGO) test $(RUST_PACKAGES) --quiet --test postgres_restart -- --include-ignored
	@# The examples built with the stage's packages and features, so that they reuse its build;
	@# `cargo run --example` would build them again with the embedded default's features alone.
	$(CARGO) build --quiet $(RUST_PACKAGES) --examples
	$(TARGET_DIR)/debug/examples/quickstart --db "$$(mktemp -d)/quickstart.db"
	$(TARGET_DIR)/debug/examples/tasks --db "$$(mktemp -d)/tasks.db"
	$(TARGET_DIR)/debug/examples/protocol --db "$$(mktemp -d)/protocol.db"
	@# What a newcomer's first `cargo run --example quickstart` compiles: the embedded default,
	@# never the core's PostgreSQL backend (its client, TLS and async runtime).
	@if $(CARGO) tree -q -e features -i handoff-core --prefix none | grep -q 'handoff-core feature "postgres"'; then \
	  echo "cargo run --example quickstart would compile the PostgreSQL backend: keep the default members to the embedded default"; exit 1; fi

# The pooler test (handoff-cli/tests/pooler.rs) runs the store through PgBouncer, installed
# from Debian's packages where this runs as root; elsewhere that test says it is skipped.
.PHONY: pgbouncer
pgbouncer:
	@test -x /usr/sbin/pgbouncer || { test "$$(id -u)" = 0 && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -q pgbouncer >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q pgbouncer >/dev/null; }; }; } || \
	  echo "PgBouncer could not be installed: the pooler test will be skipped"

# >>> python (owned by handoff-py)
# A venv of its own under target/ (gitignored, shares the workspace's cargo target dir). VIRTUAL_ENV
# and PATH stay the same between runs so that pyo3's build script does not rerun needlessly.
PY_VENV := $(CURDIR)/target/py-venv
PY_ENV := VIRTUAL_ENV=$(PY_VENV) PATH="$(PY_VENV)/bin:$$PATH"
PYTHON ?= python3

$(PY_VENV)/.tools: handoff-py/pyproject.toml Makefile
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PY_VENV)/bin/python -m pip install --quiet "maturin==1.16.0" "pytest>=8,<10" "mypy>=1.13,<2" \
	  "openai==3.54.0" "anthropic==2.12.0" "langchain-core==1.7.2" \
	  "openai-agents==0.24.0" "langgraph==1.2.22" "langgraph-swarm==0.1.0" "langgraph-checkpoint-sqlite==3.1.2" \
	  "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" "opentelemetry-exporter-otlp-proto-http==1.45.2"
	touch $@

test-python: $(PY_VENV)/.tools
	rm -rf target/py-wheels
	$(PY_ENV) maturin build --manifest-path handoff-py/Cargo.toml --out target/py-wheels
	$(PY_ENV) python -m pip install --quiet --force-reinstall --no-deps target/py-wheels/handoff_core-*.whl
	$(PY_ENV) python handoff-py/scripts/gen_stubs.py
	git diff --exit-code -- handoff-py/python/handoff_core/_native.pyi handoff-py/python/handoff_core/aio.py \
	  handoff-py/python/handoff_core/_records.py handoff-py/python/handoff_core/_store.py || { \
	  echo "the store's Python face changed when generated from the catalog: commit the regenerated files"; exit 1; }
	cd handoff-py && $(PY_ENV) python -m pytest
	cd handoff-py && $(PY_ENV) python -m mypy.stubtest handoff_core --allowlist stubtest-allowlist.txt
	cd handoff-py && $(PY_ENV) python -m mypy
	$(PY_ENV) python examples/python/swarm.py --db "$$(mktemp -d)/handoff.db"
	$(PY_ENV) python examples/python/openai_agents_handoff.py --db "$$(mktemp -d)/handoff.db"
	$(PY_ENV) python examples/python/langgraph_handoff.py --db "$$(mktemp -d)/handoff.db"
	$(PY_ENV) python examples/count_glue.py examples/python/openai_agents_handoff.py=15 examples/python/langgraph_handoff.py=20

# Not part of `make test`: what the framework adapters cost per handoff beside the same handoff
# written by hand, in make test's venv (the pinned SDKs) with the wheel make test-python built.
.PHONY: bench-adapters
bench-adapters: $(PY_VENV)/.tools
	$(PY_ENV) python benches/python_adapters.py

# Not part of `make test`: the lifecycle from Python vs Rust vs LangGraph and the Agents SDK.
# Installs the peers into a venv of its own; the release wheel comes from `pip install ./handoff-py`.
BENCH_VENV := $(CURDIR)/target/bench-venv
.PHONY: bench-python
bench-python:
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet langgraph langgraph-checkpoint-sqlite openai-agents
	$(BENCH_VENV)/bin/python -m pip install --quiet --force-reinstall --no-deps ./handoff-py
	$(CARGO) build --quiet --release -p handoff-benches --bin lifecycle_rust
	$(BENCH_VENV)/bin/python benches/python_lifecycle.py --rust-bin target/release/lifecycle_rust
# <<< python

# >>> node (owned by handoff-node)
# Installs the CLI from the committed lockfile (`npm ci` cannot be used here), builds the addon
# and its .d.ts with the store's methods, their options and results typed from the core's
# catalog (scripts/gen-types.mjs), fails if the rebuilt .d.ts or its generated header
# differs from the committed one, then runs the node:test suite and the examples. The addon is a
# debug build (with overflow checks): 80 s from a fresh clone where a release build took three
# minutes, for tests that take 45 s on it instead of 32. `npm run build` makes the release one.
# The addon is built in target/debug, with the units the workspace's tests and the Python wheel
# already built there (napi's `--target` would build them all again elsewhere: see the script).
test-node:
	cd handoff-node && npm install --no-audit --no-fund
	cd handoff-node && CARGO="$(CURDIR)/handoff-node/scripts/cargo-host-target.sh" npm run build:debug
	git diff --exit-code -- handoff-node/index.d.ts || { \
	  echo "handoff-node's .d.ts changed when rebuilt: commit the regenerated files"; exit 1; }
	cd handoff-node && node --test test/*.test.mjs
	mkdir -p examples/node/node_modules && ln -sfn ../../../handoff-node examples/node/node_modules/handoff-core
	node examples/node/swarm.mjs --db "$$(mktemp -d)/handoff.db"
	node examples/node/tasks.mjs --db "$$(mktemp -d)/tasks.db"
	ln -sfn ../../../handoff-node/node_modules/@openai examples/node/node_modules/@openai
	node examples/node/openai_agents.mjs --db "$$(mktemp -d)/handoff.db"
	$(PYTHON) examples/count_glue.py examples/node/openai_agents.mjs=15

# Not part of `make test`: what handoff-core/openai-agents costs per handoff from Node beside the
# same handoff written by hand (the twin of benches/python_adapters.py).
.PHONY: bench-adapters-node
bench-adapters-node:
	cd handoff-node && npm install --no-audit --no-fund && npm run build
	node benches/node_adapters.mjs

bench-adapters: bench-adapters-node

bench-node:
	cd handoff-node && npm install --no-audit --no-fund && npm run build
	$(CARGO) build --release -p handoff-benches --bin lifecycle_rust
	node benches/node_lifecycle.mjs
# <<< node

# >>> cli (owned by handoff-cli)
# handoff-cli's Rust tests run under test-rust (it is a default member). This adds the MCP
# end-to-end test: the official MCP Python SDK drives `handoff mcp`, from the python section's venv.
.PHONY: test-cli
$(PY_VENV)/.mcp: $(PY_VENV)/.tools
	$(PY_VENV)/bin/python -m pip install --quiet "mcp>=2.3,<3"
	touch $@

test-cli: $(PY_VENV)/.mcp cli-bin
	$(PY_VENV)/bin/python handoff-cli/tests/mcp_e2e.py "$(CLI_BIN)"

# `handoff serve`: the API over HTTP and the dashboard, in headless Chromium (Debian's, installed
# here when it is missing and this runs as root; otherwise the browser test says it skips).
.PHONY: test-serve chromium
$(PY_VENV)/.serve: $(PY_VENV)/.tools Makefile
	$(PY_VENV)/bin/python -m pip install --quiet "playwright==1.65.2" "schemathesis==4.32.5" \
	  "prometheus-client==0.26.0"
	touch $@

# chromium-driver too: handoff-cli/tests/dashboard_browser.rs drives Chromium over WebDriver.
chromium:
	@{ command -v chromium && command -v chromedriver; } >/dev/null || { test "$$(id -u)" = 0 && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }; }; } || \
	  echo "Chromium could not be installed: the dashboard's browser tests will be skipped"

test-serve: $(PY_VENV)/.serve chromium cli-bin
	HANDOFF_BIN="$(CLI_BIN)" \
	  $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider handoff-cli/tests/http handoff-cli/tests/dashboard

# Clippy over the `otlp` feature (make test's lint stage checks the default build; its Rust stage
# compiles and tests the feature).
.PHONY: check-otlp
check-otlp:
	$(CARGO) clippy --quiet -p handoff-cli --features otlp -- -D warnings

# Not part of `make test`: `handoff serve` under load on loopback beside the same lifecycle
# in-process from Python (release builds of both).
.PHONY: bench-serve
bench-serve: $(PY_VENV)/.tools
	$(CARGO) build --quiet --release -p handoff-cli
	$(PY_ENV) python handoff-cli/tests/http/load.py --bin "$${CARGO_TARGET_DIR:-$(CURDIR)/target}/release/handoff" --seconds 30 --connections 8
	$(PY_ENV) python benches/dashboard_load.py --bin "$${CARGO_TARGET_DIR:-$(CURDIR)/target}/release/handoff"
# <<< cli

# >>> ffi (owned by handoff-ffi)
# uniffi: libhandoff_ffi plus the Swift, Kotlin and Python sources generated from it by the
# workspace's own `uniffi-bindgen` (the same uniffi version as the library). Both packages are
# built in one cargo invocation so that uniffi is compiled once, with the same features.
FFI_LIB := libhandoff_ffi.$(if $(filter Darwin,$(shell uname -s)),dylib,so)

# $(1): the cargo profile's directory (debug, release); $(2): where the sources go, one folder
# per language. The Python module loads the library from its own folder, so it is copied there.
# --no-format: the output must not depend on whether swift-format or ktlint happen to be installed.
define ffi_generate
	rm -rf $(2)
	for language in swift kotlin python; do \
	  $(TARGET_DIR)/$(1)/uniffi-bindgen generate --no-format --library $(TARGET_DIR)/$(1)/$(FFI_LIB) \
	    --language $$language --out-dir $(2)/$$language || exit 1; \
	done
	python3 handoff-ffi/scripts/one_module.py $(2)/python
	cp $(TARGET_DIR)/$(1)/$(FFI_LIB) $(2)/python/
endef

# The one command for Swift and Kotlin users: a release library and its sources, in target/ffi-bindings.
ffi-bindings:
	$(CARGO) build --release -p handoff-ffi -p handoff-ffi-bindgen
	$(call ffi_generate,release,$(TARGET_DIR)/ffi-bindings)

# Generates every language, fails if the public surface of the Swift or Kotlin sources changed
# without handoff-ffi/api being updated, runs the Python tests through the generated module,
# then compiles the generated Kotlin with a Kotlin test and runs it (installing JNA and a Kotlin
# compiler the first time: see handoff-ffi/tests/kotlin/run.sh).
test-ffi: $(PY_VENV)/.tools
	$(CARGO) test --quiet -p handoff-ffi -p handoff-ffi-bindgen
	$(CARGO) build --quiet -p handoff-ffi -p handoff-ffi-bindgen
	$(call ffi_generate,debug,$(TARGET_DIR)/ffi)
	python3 handoff-ffi/scripts/surface.py swift $(TARGET_DIR)/ffi/swift/handoff_ffi.swift \
	  $(TARGET_DIR)/ffi/swift/handoff_ffi_core.swift > handoff-ffi/api/swift.txt
	python3 handoff-ffi/scripts/surface.py kotlin $(TARGET_DIR)/ffi/kotlin/uniffi/handoff_ffi/handoff_ffi.kt \
	  $(TARGET_DIR)/ffi/kotlin/uniffi/handoff_ffi_core/handoff_ffi_core.kt > handoff-ffi/api/kotlin.txt
	git diff --exit-code -- handoff-ffi/api || { \
	  echo "the Swift/Kotlin API changed: review handoff-ffi/api and commit it if the change is meant"; exit 1; }
	cd handoff-ffi && HANDOFF_FFI_PYTHON=$(TARGET_DIR)/ffi/python $(PY_ENV) python -m pytest tests/python
	PYTHON=$(PY_VENV)/bin/python handoff-ffi/tests/kotlin/run.sh \
	  $(TARGET_DIR)/ffi/kotlin $(TARGET_DIR)/debug $(TARGET_DIR)/ffi-kotlin
# <<< ffi

bench:
	$(CARGO) bench -p handoff-benches
