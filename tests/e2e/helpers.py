"""Shared by the browser tests: Chromium launch settings, timeouts, sign-in.

Playwright's sync API drives Debian's /usr/bin/chromium headless (no browser download is
possible here) against the session `stack` fixture (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import functools
import re
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout
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


def posted(page, button: str, path_end: str, status: int):
    """Press the form's button `button`; the POST's reply (to a URL ending `path_end`), which
    answers `status`."""
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith(path_end)) as reply:
        page.get_by_test_id(button).click()
    assert reply.value.status == status, reply.value.text()
    return reply.value


def open_signed_in(page, stack, token: str, role: str, route: str, ready: str) -> None:
    """Signed in with `token` (as `role`), the dashboard's `route` (`#/…`), once its element
    `ready` shows (read from AWS: the longer timeout)."""
    sign_in(page, stack, token, role)
    page.goto(f"{base(stack)}/{route}")
    expect(page.get_by_test_id(ready)).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)


def destroy_dialog(page, kind: str, name: str, action: str):
    """The one confirmation every destructive action opens (static/js/confirm.js): exactly
    one, naming its target's kind and name in its title, for `action`; answers it."""
    dialog = page.get_by_test_id("destroy-dialog")
    expect(dialog).to_have_count(1)
    expect(dialog).to_have_attribute("data-action", action)
    expect(dialog).to_have_attribute("data-kind", kind)
    expect(dialog).to_have_attribute("data-name", name)
    expect(dialog.get_by_test_id("destroy-dialog-title")).to_contain_text(f"{kind} {name}")
    # a modal: the keyboard's focus is in it (its first control, or the name to type)
    expect(dialog.locator(":focus")).to_have_count(1)
    return dialog


def cancel(dialog):
    """Cancel the one confirmation: it closes, sending nothing."""
    dialog.get_by_test_id("destroy-dialog-cancel").click()
    expect(dialog).to_have_count(0)


def plan_read(dialog):
    """Wait until the dialog shows its dry run's plan (what it removes, what depends on it)."""
    expect(dialog).to_have_attribute("data-plan", "ready", timeout=AWS_READ_TIMEOUT_MS)


# axe-core from the npm registry, pinned by tests/e2e/axe/package-lock.json (dev.sh installs it)
AXE_JS = Path(__file__).with_name("axe") / "node_modules" / "axe-core" / "axe.min.js"
AXE_FAILS = {"serious", "critical"}
# what a page's visible text never says: a value the code failed to fill in, or the name of a
# document that is the project's own (a person reading the dashboard has none of them)
LEAKS = re.compile(r"\b(null|undefined|NaN)\b|\[object Object\]"
                   r"|\b(PRODUCT|DESIGN|ARCHITECTURE)\.md\b|sandbox-facts")
# what is still being read: checked once it is gone (a page that stays busy is checked as is)
BUSY = "#view .loading, #view .spin, dialog[open] .spin"
BUSY_WAIT_MS = 5_000


# a table that does not fit (its own box, or the box that scrolls it, is wider than the
# room it has), and the page scrolling sideways
TOO_WIDE = """(within) => {
  const out = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push(`the page: ${root.scrollWidth} px`);
  for (const t of document.querySelector(within).querySelectorAll('table')) {
    if (!t.offsetParent) continue;
    const box = t.parentElement;
    if (t.scrollWidth > box.clientWidth + 1) {
      const what = t.dataset.testid || t.className || 'a table';
      out.push(`${what}: ${t.scrollWidth} px in ${box.clientWidth}`);
    }
  }
  return out;
}"""


@functools.cache
def _axe_source() -> str:
    if not AXE_JS.exists():
        raise AssertionError(f"{AXE_JS} is missing: run the tests with ./dev.sh test, which "
                             "installs axe-core (npm ci in tests/e2e/axe)")
    return AXE_JS.read_text()


def page_checks(page, where: str, within: str = "body") -> None:
    """What a person must never meet on the page as it is now (a dialog included): visible
    text that says null, undefined, NaN, [object Object] or names an internal document; a
    table wider than its room, or a page that scrolls sideways (the tests' window is 1280 px);
    axe-core's serious or critical violations, run in the page. `where` names the page in
    the failure; `within` (a CSS selector) keeps the checks to one part of it — a dialog, a
    panel — where the page around it is checked elsewhere (axe takes seconds on a long page)."""
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function("busy => !document.querySelector(busy)", arg=BUSY,
                               timeout=BUSY_WAIT_MS)
    text = page.evaluate("within => document.querySelector(within).innerText", within)
    leaks = sorted({m.group(0) for m in LEAKS.finditer(text)})
    lines = [line for line in text.splitlines() if LEAKS.search(line)]
    assert not leaks, f"{where}: the page says {leaks}: {lines[:5]}"
    wide = page.evaluate(TOO_WIDE, within)
    assert not wide, f"{where}: wider than the window ({page.viewport_size['width']} px): {wide}"
    axe_check(page, where, within)


def axe_check(page, where: str, within: str = "body") -> None:
    """axe-core's serious or critical violations of the page as it is now, in the colour
    scheme it is shown in (page_checks runs it; a walk runs it again under `dark`)."""
    # evaluated by the DevTools protocol, not as a page script: the dashboard's CSP stays on
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    violations = page.evaluate("""async (within) => {
      const r = await window.axe.run(within, { resultTypes: ['violations'] });
      return r.violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary}`),
      }));
    }""", within)
    bad = [v for v in violations if v["impact"] in AXE_FAILS]
    assert not bad, f"{where}: axe-core finds " + "; ".join(
        f"{v['id']} ({v['impact']}: {v['help']}) at {v['nodes']}" for v in bad)



@contextlib.contextmanager
def dark(page):
    """The page in its dark theme (app.css's prefers-color-scheme: dark) for the block, then
    light again. Only colours change, so what page_checks read of the text and the widths
    holds: a walk reruns only axe (its contrast rules) inside."""
    page.emulate_media(color_scheme="dark")
    try:
        yield page
    finally:
        page.emulate_media(color_scheme="light")
