"""Work-arounds for llama-cpp-python, kept in one place.

llama.cpp moves weights into "extra buffer types" (AMX tiles, repacked layouts) when the
CPU advertises support. On virtualised CPUs that advertise AMX without really providing it,
the AMX matrix multiply segfaults on the first token, which would take the whole bot down
with it (seen on a Firecracker VM with a default, ``GGML_NATIVE`` build). The Python
binding exposes no switch for llama.cpp's ``use_extra_bufts`` model parameter, so
`no_extra_buffer_types` sets it by wrapping the function that makes the default
parameters, only while a model is being constructed.

Importing llama-cpp-python opens ``os.devnull`` twice (``llama_cpp._utils``, where its quiet
model loads point stdout and stderr) and never closes either: every process that imported
it ended with "ResourceWarning: unclosed file ... /dev/null". `_close_null_files`, run at
exit, closes them.
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_patch_lock = threading.Lock()


def _close_null_files() -> None:
    """Close llama_cpp's two /dev/null files, if it was imported (only model loads use
    them, and none runs after exit has begun)."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        file = getattr(utils, name, None)
        if file is not None:
            file.close()


atexit.register(_close_null_files)


@contextmanager
def no_extra_buffer_types() -> Iterator[None]:
    """Within this block, newly constructed `llama_cpp.Llama` objects skip extra buffers."""
    import llama_cpp.llama_cpp as low_level

    with _patch_lock:
        original = low_level.llama_model_default_params

        def default_params() -> Any:
            params = original()
            if hasattr(params, "use_extra_bufts"):  # absent in older llama.cpp builds
                params.use_extra_bufts = False
            return params

        low_level.llama_model_default_params = default_params
        try:
            yield
        finally:
            low_level.llama_model_default_params = original
