#!/usr/bin/env bash
# test-python.sh [PYTEST ARGS...]: builds the Python package in
# bindings/python (pyo3 + maturin, release build) into a virtualenv under
# target/pyvenv, and runs its pytest suite. Needs python3 with the venv
# module, a Rust toolchain, and PyPI for maturin and pytest. Exits non-zero
# if the build or any test fails.
#
# PYTHON=python3.12 picks the interpreter; PYVENV=DIR the virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV="${PYVENV:-target/pyvenv}"

if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV" || {
        echo "test-python.sh: '$PYTHON -m venv' failed (Debian: apt-get install python3-venv)" >&2
        exit 1
    }
fi
VENV="$(cd "$VENV" && pwd)"
py="$VENV/bin/python"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q "maturin>=1.7,<2" "pytest>=7"
# A fresh build every run (the version does not change between edits).
"$py" -m pip install --force-reinstall --no-deps ./bindings/python

# Keep bytecode and pytest's cache out of the source tree.
export PYTHONDONTWRITEBYTECODE=1
cd bindings/python
"$py" -m pytest -p no:cacheprovider -q tests "$@"
