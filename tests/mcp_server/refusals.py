"""A tool error as the MCP server sends it, read the way a client would."""

from __future__ import annotations

import json
from typing import Any


def refusal(result: Any) -> dict[str, Any]:
    """The REST error envelope a tool error carries (`{"error": {code, message, details},
    "http_status"?}`), after checking its shape: `is_error`, no structured content (that is
    the reply's, which the output schema describes), the text `<code>: <message>` first, the
    envelope as JSON last, and the same error in `_meta.hypd.error`."""
    assert result.is_error, result
    assert result.structured_content is None, result.structured_content
    texts = [block.text for block in result.content]
    envelope = json.loads(texts[-1])
    error = envelope["error"]
    assert texts[0] == f"{error['code']}: {error['message']}", texts
    assert (result.meta or {}).get("hypd", {}).get("error") == json.loads(
        json.dumps(error, default=str)), result.meta
    return envelope
