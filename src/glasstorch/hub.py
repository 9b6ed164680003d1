"""torch.hub: models published as a `hubconf.py`, and checkpoints by URL.

A hub repository is a directory whose hubconf.py defines entrypoints (public callables) and
an optional `dependencies` list. `load(dir, name, source="local")` imports it and calls the
entrypoint; `list` and `help` read it. GitHub sources and checkpoint URLs need the network:
files already in the cache (`get_dir()`, PyTorch's location, so caches are shared) are used
without it, and a download that cannot happen says so and where to put the file instead.

    >>> import glasstorch as torch
    >>> torch.hub.get_dir().endswith("hub")
    True
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

_hub_dir = None
_MODULE_HUBCONF = "hubconf.py"
_HASH = re.compile(r"-([a-f0-9]*)\.")


def _torch_home() -> str:
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(cache, "torch")))


def get_dir() -> str:
    """The hub cache: set_dir's, else $TORCH_HOME/hub (default ~/.cache/torch/hub)."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_torch_home(), "hub")


def set_dir(d) -> None:
    """Use directory d as the hub cache."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _load_hubconf(repo_dir: str):
    path = os.path.join(repo_dir, _MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: a hub repository needs a hubconf.py")
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [dep for dep in getattr(module, "dependencies", [])
               if importlib.util.find_spec(dep) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entrypoint(hubconf, model: str):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    func = getattr(hubconf, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _repo_dir(repo_or_dir: str, source: str) -> str:
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    raise RuntimeError(f"Cannot fetch the GitHub repository '{repo_or_dir}': glasstorch.hub "
                       f"loads hub repositories from a local directory. Clone it and call "
                       f"hub.load(<directory>, model, source='local').")


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True):
    """The entrypoints hubconf.py defines (github: a local directory holding one)."""
    source = "local" if os.path.isdir(github) else "github"
    hubconf = _load_hubconf(_repo_dir(github, source))
    return [name for name in dir(hubconf)
            if callable(getattr(hubconf, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):
    """The docstring of entrypoint `model`."""
    source = "local" if os.path.isdir(github) else "github"
    return _entrypoint(_load_hubconf(_repo_dir(github, source)), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """Call entrypoint `model` of the repository's hubconf.py with *args and **kwargs."""
    source = source.lower()
    hubconf = _load_hubconf(_repo_dir(repo_or_dir, source))
    return _entrypoint(hubconf, model)(*args, **kwargs)


def download_url_to_file(url: str, dst: str, hash_prefix=None, progress: bool = True) -> None:
    """Download url to dst (through a temporary file), checking the SHA-256 prefix if given."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    try:
        response = urllib.request.urlopen(urllib.request.Request(
            url, headers={"User-Agent": "glasstorch.hub"}))
    except (urllib.error.URLError, OSError) as e:
        raise RuntimeError(f"Could not download {url} ({getattr(e, 'reason', e)}). Without "
                           f"network access, put the file at {dst} yourself.") from None
    sha256 = hashlib.sha256()
    with tempfile.NamedTemporaryFile(delete=False, dir=folder) as f:
        try:
            with response:
                while chunk := response.read(1 << 16):
                    f.write(chunk)
                    sha256.update(chunk)
            f.close()
            digest = sha256.hexdigest()
            if hash_prefix is not None and not digest.startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
            shutil.move(f.name, dst)
        finally:
            if os.path.exists(f.name):
                os.remove(f.name)


def load_state_dict_from_url(url: str, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """Load the object serialized at url, from the cache (get_dir()/checkpoints) when there,
    else downloading it first."""
    from .serialization import load as _load
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        match = _HASH.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)

