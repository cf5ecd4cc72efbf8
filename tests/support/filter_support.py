"""The feature filter loaded from its file, and a filter hook called the way Open WebUI 0.12.4 calls it.

Shared by the feature filter's own tests and the tests that run a provisioned row through it.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from tests.support.builders import FEATURE_FILTER as FILTER_PATH
from tests.support.loading import load_source

SOURCE = FILTER_PATH.read_text(encoding="utf-8")
# Dropped from sys.modules once loaded, as the tests have always had it: a test that loads the
# filter again gets a fresh module.
ff = load_source(SOURCE, "aihub_feature_filter_under_test", filename=str(FILTER_PATH), keep=False)


def call_like_openwebui(hook: Any, body: Any, *, metadata: Any, model: Any) -> Any:
    """Inject only declared parameters from the inlet pool (`utils/filter.py:get_filter_params`)."""
    pool = {
        "__event_emitter__": None,
        "__event_call__": None,
        "__user__": {"id": "u1", "role": "user"},
        "__metadata__": metadata,
        "__oauth_token__": None,
        "__request__": None,
        "__model__": model,
        "__chat_id__": None,
        "__message_id__": None,
        "__id__": "aihub_feature_filter",
    }
    sig = inspect.signature(hook)
    params = {"body": body} | {k: v for k, v in pool.items() if k in sig.parameters}
    result = hook(**params)
    return asyncio.run(result) if inspect.iscoroutine(result) else result
