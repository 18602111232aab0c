"""Shared fixtures: the repository root, and the CLI build the equality tests compare with."""

import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli():
    """The `sparrow` command: $SPARROW_CLI, else the workspace's build (release, then debug)."""
    env = os.environ.get("SPARROW_CLI")
    if env:
        return env
    for p in (ROOT / "target" / "release" / "sparrow", ROOT / "target" / "debug" / "sparrow"):
        if p.exists():
            return str(p)
    found = shutil.which("sparrow")
    if found:
        return found
    pytest.fail("no sparrow command: build it (cargo build) or set SPARROW_CLI")
