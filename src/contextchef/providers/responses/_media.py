"""The media OpenAI's Responses API takes, as data (`MediaRules`).

* ``input_image``: PNG, JPEG, WEBP and non-animated GIF, by ``image_url`` (a URL or a
  base64 ``data:`` URL) or ``file_id`` (https://platform.openai.com/docs/guides/images-vision,
  "Image input requirements"; the SDK's ``ResponseInputImageParam``).
* ``input_file``: by ``file_data``, ``file_id`` or ``file_url``, the types the file
  inputs guide lists: PDF, text and code (``.txt``, ``.md``, ``.json``, ``.html``,
  ``.xml``, code files), rich documents (``.docx``, ``.pptx``) and spreadsheets
  (``.xlsx``, ``.xls``, ``.csv``, ``.tsv``)
  (https://developers.openai.com/api/docs/guides/file-inputs; ``ResponseInputFileParam``);
  ``file_data`` goes with a ``filename`` (`providers._media.file_name`).

No audio or video: a message's content and a ``function_call_output`` list take
``input_text``, ``input_image`` and ``input_file`` only (``ResponseInputContentParam``,
``ResponseFunctionCallOutputItemParam``), so a result takes what a message takes.

Images are held to the images and vision guide's limits (20 MB per image, 500 images and
50 MB of image bytes per request: `openai_chat._media.IMAGE_LIMITS`, one guide for both
APIs).
"""

from __future__ import annotations

from types import MappingProxyType

from contextchef.providers._media import ALL_SOURCES, MediaRules
from contextchef.providers.openai_chat._media import IMAGE_LIMITS

__all__ = ["RESPONSES_MEDIA"]

_OFFICE = "application/vnd.openxmlformats-officedocument."
_TYPES = MappingProxyType(
    dict.fromkeys(
        (
            "image/png",
            "image/jpeg",
            "image/webp",
            "image/gif",
            "application/pdf",
            "text/*",
            "application/json",
            "application/xml",
            _OFFICE + "wordprocessingml.document",
            _OFFICE + "presentationml.presentation",
            _OFFICE + "spreadsheetml.sheet",
            "application/vnd.ms-excel",
        ),
        ALL_SOURCES,
    )
)
RESPONSES_MEDIA = MediaRules(
    message=_TYPES,
    result=_TYPES,
    source="images-vision and file-inputs guides; SDK types",
    limits=IMAGE_LIMITS,
)
"""What a message item and a ``function_call_output`` take (see the module doc)."""
