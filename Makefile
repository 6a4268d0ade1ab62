# The habits of working on tierlab, one command each (README, "Tests").
.PHONY: dev test-fast test lint

# An editable install whose extension is built with the quick-to-compile `fast` profile
# (Cargo.toml); Python edits take effect at once, Rust ones at the next `make dev`.
# (Through pip, with maturin's build arguments, so it works with or without a virtualenv.)
dev:
	MATURIN_PEP517_ARGS="--profile fast" python3 -m pip install --quiet -e ".[test]"

# The unit tier: in-process tests only (tests/unit), a few minutes.
test-fast:
	python3 -m pytest tests/unit -q

# Everything, as CI runs it (.ci/run).
test:
	python3 -m pytest && cargo test

# The gates every commit passes: formatting, lints, types, the stub against the extension.
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	python3 -m ruff check .
	python3 -m ruff format --check .
	python3 -m mypy
	python3 -m mypy.stubtest tierlab._core
