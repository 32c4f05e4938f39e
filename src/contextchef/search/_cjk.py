"""The CJK character classes, in a leaf module every layer from search up reads cheaply.

`CJK` is read by the index's segmentation (`contextchef.search._index`), the rankers'
Latin-script check (`contextchef.search._rankers`) and the pruner's word boundaries
(`contextchef.session._pruner`); `HAN` by the dictionary route
(`contextchef.search._bilingual`, `contextchef.search._scripts`). Here rather than in
`_bilingual` so that the first session, which loads the rankers and the pruner, does not
load the dictionary route's module with them.
"""

from __future__ import annotations

import re

__all__ = ["CJK", "HAN"]

CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
"""Runs of CJK characters (kana, Han, Hangul, compatibility ideographs); `HAN`: Han only."""
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
"""Runs of Han characters: what CC-CEDICT translates (`contextchef.search._bilingual`)."""
