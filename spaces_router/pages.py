"""The router's own answers (a person reads them in the tab the space was to open in): small
pages that say what happened and what to do, never a stack trace."""

from __future__ import annotations

import html

import h11

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · hypd</title>
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;
padding:0 1rem}}</style>
</head><body><main><h1>{title}</h1><p>{message}</p></main></body></html>
"""


def page(status: int, title: str, message: str,
         extra: list[tuple[str, str]] | None = None) -> tuple[h11.Response, bytes]:
    body = _PAGE.format(title=html.escape(title), message=html.escape(message)).encode()
    headers = [("content-type", "text/html; charset=utf-8"),
               ("content-length", str(len(body))), ("cache-control", "no-store"),
               ("x-content-type-options", "nosniff"), *(extra or [])]
    return h11.Response(status_code=status, headers=headers), body
