"""Drive Open WebUI's own chat page in a real Chromium: what a user sees, read from the DOM.

Playwright drives Debian's `chromium` (scripts/ensure-chromium); it never downloads a browser.
Selectors follow Open WebUI 0.12.4's markup: the chat input `#chat-input`, the integrations menu
`#integration-menu-button` (one `menuitemcheckbox` per toggle, its description in a tooltip), the
chips of the toggles that are on (a native one is a button with `aria-pressed`, a toggle filter's
a button with its icon), the model selector `#model-selector-model-button` (one `option` per model).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.builders import REPO

# Flags that work on these machines: no sandbox (root), no GPU, no traffic but loopback.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"
UI_TIMEOUT_MS = 60_000  # a 2-core machine shared by several suites: the first page load is slow


class BrowserUnavailable(RuntimeError):
    """Chromium or Playwright is missing and cannot be installed here."""


def chromium_path() -> str:
    """The system Chromium, installed by scripts/ensure-chromium when missing."""
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure-chromium")], capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        raise BrowserUnavailable(result.stderr.strip() or "scripts/ensure-chromium failed")
    return result.stdout.strip().splitlines()[-1]


def launch(playwright: Any) -> Any:
    """One headless Chromium for the whole module. Playwright gives it a fresh temporary profile
    (`--user-data-dir` in a temp dir, removed on close); each user gets a context of its own."""
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)


def chromium_session(unavailable: Callable[[str], Any]) -> Iterator[Any]:
    """A module's Chromium, closed at the end; ``unavailable(reason)`` ends the test when Playwright
    or Chromium is missing (fail under CI, skip elsewhere)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable(f"the playwright package is missing ({exc}); scripts/test installs the test extras")
    with sync_playwright() as playwright:
        try:
            chromium = launch(playwright)
        except (BrowserUnavailable, Exception) as exc:  # noqa: BLE001 - any launch failure means no browser
            unavailable(f"Chromium could not be started: {exc}")
        yield chromium
        chromium.close()


@dataclass(frozen=True)
class Toggle:
    """One toggle as the integrations menu shows it."""

    name: str
    on: bool
    icon: str  # the <img> src, or "svg" for an inline icon, or "" for none
    description: str


class ChatPage:
    """One logged-in user's tab on the instance."""

    def __init__(self, page: Any, base_url: str) -> None:
        self.page = page
        self.url = base_url.rstrip("/")
        page.set_default_timeout(UI_TIMEOUT_MS)

    # ----------------------------------------------------------------- session

    def login(self, email: str, password: str) -> None:
        """Sign in through the login form, then dismiss the release notes shown on a first login."""
        page = self.page
        page.goto(f"{self.url}/auth")
        page.fill("input[type=email]", email)
        page.fill("input[type=password]", password)
        page.keyboard.press("Enter")
        page.wait_for_selector("#chat-input")
        notes = page.get_by_text("Okay, Let's Go!")
        try:
            notes.wait_for(timeout=5_000)
            notes.click()
        except Exception:  # no release notes for this user: nothing to dismiss
            pass

    def new_chat(self, model_id: str) -> None:
        """A new chat with this model selected, its defaults applied. On a new chat already, the
        model is picked in the selector, as a user would (no page load); otherwise the page loads."""
        page = self.page
        if urlsplit(page.url).path in ("", "/") and page.locator("#chat-input").count():
            page.click("#model-selector-model-button")
            option = page.locator(f"#model-selector-list [data-value='{model_id}']")
            try:
                option.wait_for(timeout=3_000)
            except Exception:  # not rendered by the virtual list: load the page instead
                page.keyboard.press("Escape")
            else:
                option.click()
                page.locator("#model-selector-list").wait_for(state="detached")
                page.wait_for_timeout(300)  # the defaults of the new model are applied
                return
        page.goto(f"{self.url}/?models={model_id}")
        page.wait_for_selector("#chat-input")
        page.locator("#model-selector-model-button").wait_for()
        page.wait_for_timeout(500)  # the defaults are applied once the model list arrived

    # ----------------------------------------------------------------- model selector

    def selectable_models(self) -> set[str]:
        """The ids of every model the selector offers (scrolled through: the list is virtual)."""
        page = self.page
        page.click("#model-selector-model-button")
        listbox = page.locator("#model-selector-list")
        listbox.wait_for()
        seen: set[str] = set()
        for _ in range(50):
            before = len(seen)
            seen.update(listbox.locator("[role=option]").evaluate_all("els => els.map(e => e.dataset.value)"))
            at_end = listbox.evaluate(
                "el => { el.scrollTop += 200; return el.scrollTop + el.clientHeight >= el.scrollHeight; }"
            )
            page.wait_for_timeout(100)
            if at_end and len(seen) == before:
                break
        page.keyboard.press("Escape")
        return seen

    def model_icon_data(self, model_id: str) -> str:
        """The base64 bytes of the picture the new chat shows for the model, as the browser loads it."""
        image = self.page.locator(f"img[src*='profile/image?id={model_id}']").first
        image.wait_for()
        return image.evaluate(
            """async img => {
                const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
                let text = ''; for (const b of bytes) text += String.fromCharCode(b);
                return btoa(text);
            }"""
        )

    def suggestion_cards(self) -> list[tuple[str, str]]:
        """The suggestion cards under the input of a new chat: (title, second line)."""
        cards = self.page.locator("[aria-labelledby=suggestions-heading] [role=listitem] button")
        cards.first.wait_for()
        texts = cards.evaluate_all("els => els.map(e => e.innerText.trim())")
        return [(lines[0].strip(), "\n".join(lines[1:]).strip()) for lines in (text.split("\n") for text in texts)]

    # ----------------------------------------------------------------- toggles

    def open_integrations(self) -> Any | None:
        """Open the integrations menu; None when the input shows no such button (no toggles)."""
        button = self.page.locator("#integration-menu-button")
        if button.count() == 0:
            return None
        button.click()
        menu = self.page.locator("[role=menu]")
        menu.wait_for()
        return menu

    def close_menu(self) -> None:
        if self.page.locator("[role=menu]").count() == 0:
            return
        self.page.keyboard.press("Escape")
        self.page.locator("[role=menu]").wait_for(state="detached")

    def toggles(self) -> list[Toggle]:
        """Every toggle in the integrations menu: name, on/off, icon and its tooltip."""
        menu = self.open_integrations()
        if menu is None:
            return []
        items = menu.locator("[role=menuitemcheckbox]")
        found = []
        for index in range(items.count()):
            item = items.nth(index)
            info = item.evaluate(
                """el => {
                    const img = el.querySelector('img');
                    return {name: el.innerText.trim(), on: el.getAttribute('aria-checked') === 'true',
                            icon: img ? img.getAttribute('src') : (el.querySelector('svg') ? 'svg' : '')};
                }"""
            )
            found.append(Toggle(info["name"], info["on"], info["icon"], self._tooltip(item)))
        self.close_menu()
        return found

    def _tooltip(self, item: Any) -> str:
        """The tooltip Open WebUI shows on hovering a menu item (its description)."""
        item.hover()
        holder = item.locator("xpath=ancestor-or-self::*[@aria-describedby][1]")
        try:
            holder.wait_for(timeout=3_000)
        except Exception:
            return ""
        tip = self.page.locator(f"#{holder.get_attribute('aria-describedby')}")
        tip.wait_for()
        return tip.inner_text().strip()

    def set_toggle(self, name: str, on: bool) -> None:
        """Switch one toggle of the integrations menu on or off."""
        menu = self.open_integrations()
        assert menu is not None, "the chat input shows no integrations menu"
        items = menu.locator("[role=menuitemcheckbox]")
        # By its text (the accessible name also holds the icon's alt text).
        names = items.evaluate_all("els => els.map(e => e.innerText.trim())")
        assert name in names, f"no toggle {name!r} in the menu: {names}"
        item = items.nth(names.index(name))
        if (item.get_attribute("aria-checked") == "true") != on:
            item.click()
        self.page.wait_for_function(
            "([name, on]) => [...document.querySelectorAll('[role=menuitemcheckbox]')]"
            ".some(e => e.innerText.trim() === name && (e.getAttribute('aria-checked') === 'true') === on)",
            arg=[name, on],
        )
        self.close_menu()

    def chips(self) -> set[str]:
        """The names of the toggles shown as on in the chat input (the chips next to the menu)."""
        return set(
            self.page.evaluate(
                """() => {
                const form = document.querySelector('#chat-input').closest('form');
                const names = [];
                for (const b of form.querySelectorAll('button')) {
                    if (b.id || b.closest('[role=menu]')) continue;   // menus, selector, voice
                    if (b.getAttribute('aria-pressed') === 'true') names.push(b.getAttribute('aria-label'));
                    else if (!b.hasAttribute('aria-pressed')) {
                        const img = b.querySelector(':scope img[alt]');
                        if (img && !b.getAttribute('aria-label')) names.push(img.getAttribute('alt'));
                    }
                }
                return names;
            }"""
            )
        )

    # ----------------------------------------------------------------- chatting

    def send(self, text: str) -> None:
        box = self.page.locator("#chat-input")
        box.click()
        box.fill(text)
        self.page.keyboard.press("Enter")

    def response(self, until: str | re.Pattern[str], *, timeout_ms: int = UI_TIMEOUT_MS) -> Any:
        """The last answer, once its text matches `until` (it streams in)."""
        answer = self.page.locator("#response-content-container").last
        answer.wait_for(timeout=timeout_ms)
        pattern = until if isinstance(until, re.Pattern) else re.compile(re.escape(until))
        self.page.wait_for_function(
            "([src, flags]) => { const all = document.querySelectorAll('#response-content-container');"
            " const last = all[all.length - 1]; return !!last && new RegExp(src, flags).test(last.innerText); }",
            arg=[pattern.pattern, "i" if pattern.flags & re.IGNORECASE else ""],
            timeout=timeout_ms,
        )
        return answer

    def wait_done(self, *, timeout_ms: int = UI_TIMEOUT_MS) -> None:
        """Wait until the last answer is finished: Open WebUI shows its action buttons only then."""
        self.page.wait_for_function(
            "() => { const all = document.querySelectorAll('#response-content-container');"
            " const msg = all.length && all[all.length - 1].closest('[id^=message-]');"
            " return !!msg && !!msg.querySelector('button[aria-label=Copy]'); }",
            timeout=timeout_ms,
        )

    # ----------------------------------------------------------------- evidence

    def save_artifacts(self, name: str) -> list[Path]:
        """Screenshot and HTML of the page, under test-artifacts/ (for a failed test)."""
        ARTIFACTS.mkdir(exist_ok=True)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:150]
        png, html = ARTIFACTS / f"{stem}.png", ARTIFACTS / f"{stem}.html"
        try:
            self.page.screenshot(path=str(png), full_page=True)
            html.write_text(self.page.content(), encoding="utf-8")
        except Exception as exc:  # a crashed page must not hide the test's own failure
            html.write_text(f"could not save the page: {exc}", encoding="utf-8")
        return [png, html]


def logged_in_page(
    browser: Any, instance: Any, request: Any = None, *, login: Mapping[str, str] | None = None
) -> Iterator[ChatPage]:
    """A tab of its own, signed in to ``instance`` (the admin of scripts/openwebui-local unless
    ``login`` names another user); for a fixture to ``yield from``. With the test's ``request``,
    a failed test's screenshot and DOM go to test-artifacts/."""
    if login is None:
        login = json.loads((instance.instance_dir / "admin.json").read_text(encoding="utf-8"))
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ChatPage(context.new_page(), instance.url)
    page.login(login["email"], login["password"])
    yield page
    report = getattr(getattr(request, "node", None), "rep_call", None)
    if report is not None and report.failed:
        page.save_artifacts(request.node.name)
    context.close()
