"""The render benchmark's baseline is the same document as the rendering it is weighed against.

``benchmarks/render.py`` times the rendering against the same collector config built as a dict
and dumped by PyYAML (the original module's way); when the templates change and the dict does
not, the ratio compares two different documents. The benchmark prints ``DOCUMENTS DIFFER`` then;
this test fails instead, so the baseline is updated with the templates.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from support import helpers

from benchmarks.render import BENCH_DIR, dict_document, large_mapping
from nemo_gym.orchestration.api import SubmitConfig
from nemo_gym.orchestration.executors import otel


@pytest.mark.parametrize(
    "mapping",
    [yaml.safe_load(helpers.EXAMPLE.read_text(encoding="utf-8")), large_mapping()],
    ids=["example", "large"],
)
def test_the_dict_baseline_is_the_rendered_document(mapping: dict[str, Any]) -> None:
    config = SubmitConfig.from_dict(mapping)
    rendered = yaml.safe_load(otel.render_collector_config(config, "aime25", BENCH_DIR))
    assert dict_document(config, "aime25", BENCH_DIR) == rendered
