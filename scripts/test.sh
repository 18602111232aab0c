#!/usr/bin/env bash
# Every test: the Rust workspace's, then the Python package's, run by pytest on a real wheel
# built by maturin and installed into a virtual environment (target/py-venv, or
# $SPARROW_PY_VENV) that this script creates with the test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}

cargo test --workspace

venv=${SPARROW_PY_VENV:-$target/py-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin>=1.5,<2" pytest numpy scipy anndata pandas ml_dtypes
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
# The dev profile (optimised dependencies) builds in half the time of release and tests the
# same code.
"$venv/bin/maturin" build --quiet --profile dev --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl
# The SEACells tests compare with the command `cargo test` just built.
SPARROW_CLI=${SPARROW_CLI:-$target/debug/sparrow} "$venv/bin/python" -m pytest -q sparrow-py/tests
