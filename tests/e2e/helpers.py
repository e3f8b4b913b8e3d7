"""Shared by the browser tests: Chromium launch settings, timeouts, sign-in.

Playwright's sync API drives Debian's /usr/bin/chromium headless (no browser download is
possible here) against the session `stack` fixture (tests/conftest.py).
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
UI_TIMEOUT_MS = 15_000
AWS_READ_TIMEOUT_MS = 60_000
OPERATION_TIMEOUT_MS = 120_000
# Playwright's `expect` has its own default timeout (5 s), separate from the context's.
expect.set_options(timeout=UI_TIMEOUT_MS)
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def base(stack) -> str:
    return stack.url.rstrip("/")


def sign_in(page, stack, token, role):
    page.goto(base(stack) + "/")
    page.get_by_test_id("token-input").fill(token)
    page.get_by_test_id("sign-in").click()
    expect(page.get_by_test_id("whoami-role")).to_have_text(role)
    expect(page.get_by_test_id("whoami")).to_be_visible()
    # signed in, a person starts on the clusters list
    expect(page).to_have_url(re.compile(r"#/clusters$"))
