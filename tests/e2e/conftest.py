"""Browser fixtures shared by the dashboard tests (helpers.py holds the rest)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("playwright.sync_api")

from tests.e2e.helpers import CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT_MS


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is not installed: run the tests with ./dev.sh test, which "
                    "installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, stack):
    """A fresh browser context (empty sessionStorage) per test; fails on uncaught JS errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, accept_downloads=True)
    context.set_default_timeout(UI_TIMEOUT_MS)
    pg = context.new_page()
    js_errors = []
    pg.on("pageerror", lambda exc: js_errors.append(str(exc)))
    try:
        yield pg
    finally:
        context.close()
    assert not js_errors, f"uncaught JavaScript errors in the dashboard: {js_errors}"
