"""What a user sees in Open WebUI's own chat page, in a real Chromium (issue 8).

One instance, one browser, two logins for the whole module: the sample blueprints are synced
once with every backend on the scripted AG-UI server, one private agent opened to a group
`Support` that the normal user belongs to, and one extra public agent whose backend is down.
Every expectation is derived from the blueprints through the project's own loader (supported
features, defaults, access, feature titles, descriptions and icons), never from a list kept here.

On failure the tab of each user is saved as a screenshot and HTML under test-artifacts/.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import provisioner.cli as cli
from provisioner.features import is_native
from provisioner.loader import Catalog, load_catalog
from tests.support.browser_support import ChatPage, Toggle, chromium_session, logged_in_page
from tests.support.builders import REPO, closed_port, samples_on, write_function_dir
from tests.support.chat_support import AGENT_ANSWER, AGENT_PIPE
from tests.support.owui_instance import unavailable

GROUP = "Support"
MEMBER_EMAIL = "member@localhost"
DOWN_BLUEPRINT = "down-desk"

# How Open WebUI itself labels its three native toggles (name, tooltip) in 0.12.4.
NATIVE_LOOK = {
    "web_search": ("Web Search", "Search the internet"),
    "image_generation": ("Image", "Generate an image"),
    "code_interpreter": ("Code Interpreter", "Execute code for analysis"),
}

# The scripted AG-UI server's `lead_tool_summary` turn (tests/support/agui_server/app.py SCRIPTS).
LEAD_IN, TOOL, SUMMARY = "Let me look up the weather.", "get_weather", "It is sunny in Paris."


# --- expectations, from the blueprints ------------------------------------------------------------


@dataclass(frozen=True)
class AgentView:
    """What one agent should look like in the chat page, derived from its blueprint."""

    model_id: str
    name: str
    access: Any  # "public" | "private" | GroupAccess
    supported: frozenset[str]
    defaults: frozenset[str]
    icon: str | None  # data URI of the icon the blueprint sets for it, if any
    suggestions: tuple[tuple[str, str], ...] | None  # its suggestion cards (title, subtitle), if set

    @property
    def is_sample(self) -> bool:
        return not self.model_id.startswith(f"aihub_agent_pipe.{DOWN_BLUEPRINT}.")

    def readable_by(self, groups: set[str]) -> bool:
        if self.access == "public":
            return True
        return bool(getattr(self.access, "groups", None)) and bool(set(self.access.groups) & groups)


def agent_views(catalog: Catalog) -> list[AgentView]:
    views = []
    for loaded in catalog.blueprints:
        bp = loaded.blueprint
        for agent in bp.agents:
            cards = agent.suggestions if agent.suggestions is not None else bp.suggestions
            views.append(
                AgentView(
                    f"aihub_agent_pipe.{bp.id}.{agent.id}",
                    agent.name,
                    agent.access,
                    frozenset(loaded.supported_features),
                    frozenset(agent.defaults),
                    loaded.agent_icons.get(agent.id) or loaded.icon,
                    None if cards is None else tuple((card.title, card.subtitle) for card in cards),
                )
            )
    return sorted(views, key=lambda view: view.model_id)


def toggle_title(catalog: Catalog, feature: str) -> str:
    return NATIVE_LOOK[feature][0] if is_native(feature) else catalog.features[feature].title


def expected_toggles(catalog: Catalog, view: AgentView) -> dict[str, tuple[bool, str, str | None]]:
    """title -> (on in a new chat, tooltip, icon src or None where any icon will do)."""
    expected = {}
    for feature in sorted(view.supported):
        if is_native(feature):
            title, tooltip = NATIVE_LOOK[feature]
            icon = None
        else:
            title, tooltip = catalog.features[feature].title, catalog.features[feature].description
            icon = catalog.feature_icons.get(feature)
        expected[title] = (feature in view.defaults, tooltip, icon)
    return expected


def toggle_problems(catalog: Catalog, view: AgentView, shown: list[Toggle], chips: set[str]) -> list[str]:
    """Every way the chat input of this agent differs from its blueprint, in words."""
    want = expected_toggles(catalog, view)
    got = {toggle.name: toggle for toggle in shown}
    problems = []
    names = [toggle.name for toggle in shown]
    if len(names) != len(set(names)):
        problems.append(f"toggles shown twice: {sorted(names)}")
    if set(got) != set(want):
        problems.append(f"toggles {sorted(got)}, expected {sorted(want)}")
    for title in sorted(set(got) & set(want)):
        on, tooltip, icon = want[title]
        toggle = got[title]
        if toggle.on != on:
            problems.append(
                f"{title!r} is {'on' if toggle.on else 'off'} in a new chat, expected {'on' if on else 'off'}"
            )
        if toggle.description != tooltip:
            problems.append(f"{title!r} describes itself as {toggle.description!r}, expected {tooltip!r}")
        if not toggle.icon or (icon is not None and toggle.icon != icon):
            problems.append(f"{title!r} shows icon {toggle.icon[:60]!r}, expected {(icon or 'an icon')[:60]!r}")
    want_chips = {title for title, (on, _, _) in want.items() if on}
    if chips != want_chips:
        problems.append(f"chips {sorted(chips)}, expected {sorted(want_chips)}")
    return [f"{view.model_id}: {problem}" for problem in problems]


# --- the site: one instance, synced once, two users -------------------------------------------------


@dataclass
class Site:
    owui: Any
    agui: Any
    catalog: Catalog
    cli_args: list[str]
    member_password: str
    member_id: str
    down_host: str

    @property
    def agents(self) -> list[AgentView]:
        return agent_views(self.catalog)

    def member_agents(self) -> list[AgentView]:
        return [view for view in self.agents if view.readable_by({GROUP})]

    def sync(self) -> None:
        """`provision sync` of the browser blueprints into the instance."""
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OPENWEBUI_URL", self.owui.url)
            env.setenv("OPENWEBUI_TOKEN", self.owui.token)
            env.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
            code = cli.main(["sync", "--yes", *self.cli_args])
        assert code == 0, "provision sync failed (its output is in the captured stdout)"


def browser_blueprints(root: Path, agent_url: str, down_url: str) -> Path:
    """The samples with every backend on the scripted server, the first private agent readable by
    the group, and one public agent whose backend is down."""
    opened: list[str] = []

    def open_the_first_private_one(agent: dict[str, Any]) -> None:
        if not opened and agent.get("access", "private") == "private":
            agent["access"] = {"groups": [GROUP]}
            opened.append(agent["id"])

    samples_on(root, agent_url, adjust=open_the_first_private_one)
    assert opened, "no private sample agent to open to the group"
    (root / "down_desk.yaml").write_text(
        yaml.safe_dump(
            {
                "id": DOWN_BLUEPRINT,
                "name": "Down Desk",
                "description": "An agent whose backend is down.",
                "backend": {"transport": "agui", "url": down_url},
                "steps": [{"id": "answer", "calls": ["draft_reply"]}],
                "agents": [{"id": "default", "name": "Down Desk", "access": "public"}],
            },
            sort_keys=False,
        ),
        encoding="utf-8",
    )
    return root


@pytest.fixture(scope="module")
def site(openwebui, agui_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    if not openwebui.healthy():
        openwebui.start()
    openwebui.reset()
    tmp = tmp_path_factory.mktemp("browser")
    port = closed_port()
    root = browser_blueprints(tmp / "blueprints", agui_server.agent_url, f"http://127.0.0.1:{port}/agent")
    functions = write_function_dir(tmp / "functions", root, AGENT_PIPE)
    password = secrets.token_urlsafe(18)
    with openwebui.client() as http:
        group = http.post("/api/v1/groups/create", json={"name": GROUP, "description": ""}).raise_for_status().json()
        for user in (
            http.get("/api/v1/users/", params={"query": MEMBER_EMAIL}).raise_for_status().json().get("users", [])
        ):
            if user["email"] == MEMBER_EMAIL:  # left by an interrupted run on a kept instance
                http.delete(f"/api/v1/users/{user['id']}").raise_for_status()
        member = (
            http.post(
                "/api/v1/auths/add",
                json={"name": "Member", "email": MEMBER_EMAIL, "password": password, "role": "user"},
            )
            .raise_for_status()
            .json()
        )
        http.post(f"/api/v1/groups/id/{group['id']}/users/add", json={"user_ids": [member["id"]]}).raise_for_status()
    built = Site(
        openwebui,
        agui_server,
        load_catalog(root),
        ["-p", str(root), "--bundle", str(functions)],
        password,
        member["id"],
        f"127.0.0.1:{port}",
    )
    built.sync()
    yield built
    with openwebui.client() as http:
        http.delete(f"/api/v1/users/{member['id']}")
    openwebui.reset()


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Any]:
    yield from chromium_session(unavailable)


def _logged_in(browser: Any, site: Site, email: str, password: str) -> Iterator[ChatPage]:
    yield from logged_in_page(browser, site.owui, login={"email": email, "password": password})


@pytest.fixture(scope="module")
def admin(browser: Any, site: Site) -> Iterator[ChatPage]:
    credentials = site.owui.instance_dir / "admin.json"  # written by scripts/openwebui-local
    admin_login = json.loads(credentials.read_text(encoding="utf-8"))
    yield from _logged_in(browser, site, admin_login["email"], admin_login["password"])


@pytest.fixture(scope="module")
def member(browser: Any, site: Site) -> Iterator[ChatPage]:
    yield from _logged_in(browser, site, MEMBER_EMAIL, site.member_password)


@pytest.fixture(autouse=True)
def evidence_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """Save what each user's tab shows when the test failed (screenshot + HTML)."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed:
        return
    saved = []
    for role in ("admin", "member"):
        if role in request.fixturenames:
            saved += request.getfixturevalue(role).save_artifacts(f"{request.node.name}-{role}")
    if saved:
        print(f"\nbrowser evidence: {', '.join(str(path.relative_to(REPO)) for path in saved)}")


@pytest.fixture
def instance_switches_on(site: Site) -> Iterator[None]:
    """An admin turns on web search, image generation and code interpreter, then syncs again.

    The search engine and image endpoint point at a closed loopback port: Open WebUI running
    either for an agent would fail loudly rather than reach the internet. Restored afterwards.
    """
    port = closed_port()
    with site.owui.client() as http:
        web_before = http.get("/api/v1/retrieval/config").raise_for_status().json()["web"]
        images_before = http.get("/api/v1/images/config").raise_for_status().json()
        code_before = http.get("/api/v1/configs/code_execution").raise_for_status().json()
        http.post(
            "/api/v1/retrieval/config/update",
            json={
                "web": {
                    "ENABLE_WEB_SEARCH": True,
                    "WEB_SEARCH_ENGINE": "searxng",
                    "SEARXNG_QUERY_URL": f"http://127.0.0.1:{port}/search?q=<query>",
                }
            },
        ).raise_for_status()
        http.post(
            "/api/v1/images/config/update",
            json={
                **images_before,
                "ENABLE_IMAGE_GENERATION": True,
                "IMAGE_GENERATION_ENGINE": "openai",
                "IMAGES_OPENAI_API_BASE_URL": f"http://127.0.0.1:{port}/v1",
            },
        ).raise_for_status()
        http.post(
            "/api/v1/configs/code_execution", json={**code_before, "ENABLE_CODE_INTERPRETER": True}
        ).raise_for_status()
    site.sync()
    try:
        yield
    finally:
        with site.owui.client() as http:
            http.post(
                "/api/v1/retrieval/config/update",
                json={
                    "web": {
                        key: web_before[key] for key in ("ENABLE_WEB_SEARCH", "WEB_SEARCH_ENGINE", "SEARXNG_QUERY_URL")
                    }
                },
            ).raise_for_status()
            http.post("/api/v1/images/config/update", json=images_before).raise_for_status()
            http.post("/api/v1/configs/code_execution", json=code_before).raise_for_status()
        site.sync()


# --- the tests -------------------------------------------------------------------------------------


def test_model_selector_lists_exactly_the_agents_each_user_may_use(
    site: Site, admin: ChatPage, member: ChatPage
) -> None:
    everyone = {view.model_id for view in site.agents}
    readable = {view.model_id for view in site.member_agents()}
    assert readable < everyone, "the test needs an agent the member may not use"

    admin.new_chat(site.agents[0].model_id)
    assert admin.selectable_models() == everyone
    member.new_chat(site.member_agents()[0].model_id)
    assert member.selectable_models() == readable


def check_every_agents_toggles(site: Site, admin: ChatPage, member: ChatPage, label: str) -> None:
    """Each agent once, as the member where the member may use it (what users see), else as admin.
    An agent whose input is wrong is saved (menu open) under test-artifacts/<label>-<agent>."""
    problems = []
    for view in site.agents:
        page = member if view.readable_by({GROUP}) else admin
        page.new_chat(view.model_id)
        shown = page.toggles()
        found = toggle_problems(site.catalog, view, shown, page.chips())
        if found:
            page.open_integrations()
            page.save_artifacts(f"{label}-{view.model_id}")
            page.close_menu()
        problems += found
    assert not problems, "the chat input does not show what the blueprints support:\n" + "\n".join(problems)


def test_every_agent_shows_exactly_its_supported_toggles_on_a_stock_instance(
    site: Site, admin: ChatPage, member: ChatPage
) -> None:
    check_every_agents_toggles(site, admin, member, "stock")


def test_every_agent_shows_exactly_its_supported_toggles_with_the_instance_switches_on(
    site: Site, admin: ChatPage, member: ChatPage, instance_switches_on: None
) -> None:
    check_every_agents_toggles(site, admin, member, "switches-on")


def test_every_sample_agent_shows_its_own_icon_and_suggestions(site: Site, admin: ChatPage) -> None:
    problems = []
    for view in filter(lambda view: view.is_sample, site.agents):
        if view.icon is None or not view.suggestions:
            problems.append(f"{view.model_id}: the sample sets no icon or no suggestions")
            continue
        admin.new_chat(view.model_id)
        icon = admin.model_icon_data(view.model_id)
        if icon != view.icon.partition(",")[2]:
            problems.append(f"{view.model_id}: shows icon {icon[:40]!r}..., not its blueprint's")
        cards = admin.suggestion_cards()
        if set(cards) != set(view.suggestions):
            problems.append(f"{view.model_id}: suggestions {sorted(cards)}, expected {sorted(view.suggestions)}")
    assert not problems, "\n".join(problems)


def test_a_chat_renders_lead_in_then_the_tool_block_then_the_summary(site: Site, member: ChatPage) -> None:
    view = next(view for view in site.member_agents() if view.is_sample)
    member.new_chat(view.model_id)
    member.send("scenario:lead_tool_summary")
    answer = member.response(SUMMARY)
    member.wait_done()

    order = answer.evaluate(
        """(el, [lead, tool, summary]) => {
            const find = (pred) => [...el.querySelectorAll('*')].find(pred);
            const leadEl = find(e => e.children.length === 0 && e.textContent.trim() === lead);
            const toolEl = find(e => e.getAttribute('role') === 'button' && e.textContent.includes(tool));
            const sumEl = find(e => e.children.length === 0 && e.textContent.trim() === summary);
            const before = (a, b) => !!a && !!b && !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
            return {lead: !!leadEl, tool: !!toolEl, summary: !!sumEl,
                    leadBeforeTool: before(leadEl, toolEl), toolBeforeSummary: before(toolEl, sumEl)};
        }""",
        [LEAD_IN, TOOL, SUMMARY],
    )
    assert order == {"lead": True, "tool": True, "summary": True, "leadBeforeTool": True, "toolBeforeSummary": True}

    answer.get_by_role("button").filter(has_text=TOOL).first.click()
    block = answer.inner_text()
    assert re.search(r"city\s*Paris", block), block  # the arguments
    assert '"sky": "sunny"' in block, block  # the result


def runs_for(site: Site, text: str) -> list[dict[str, Any]]:
    """The agent runs whose last user message is `text` (title/tag tasks are left out)."""
    runs = []
    for run in site.agui.recorded():
        users = [m for m in run.get("messages", []) if m.get("role") == "user"]
        if users and text in str(users[-1].get("content")):
            runs.append(run)
    return runs


def test_switching_a_default_toggle_off_changes_what_the_backend_receives(site: Site, member: ChatPage) -> None:
    view = next(view for view in site.member_agents() if view.defaults and view.is_sample)
    feature = sorted(view.defaults)[0]
    title = toggle_title(site.catalog, feature)

    member.new_chat(view.model_id)
    member.send("first, with the default on")
    member.response(AGENT_ANSWER)
    member.wait_done()
    (run,) = runs_for(site, "first, with the default on")
    assert feature in run["forwardedProps"]["features"]

    member.new_chat(view.model_id)
    member.set_toggle(title, False)
    assert title not in member.chips()
    member.send("second, switched off")
    member.response(AGENT_ANSWER)
    member.wait_done()
    (run,) = runs_for(site, "second, switched off")
    assert feature not in run["forwardedProps"]["features"]
    assert set(run["forwardedProps"]["features"]) == set(view.defaults) - {feature}


def test_a_backend_that_is_down_shows_a_clear_error(site: Site, member: ChatPage) -> None:
    member.new_chat(f"aihub_agent_pipe.{DOWN_BLUEPRINT}.default")
    member.send("hello?")
    member.wait_done()
    text = member.page.locator("#response-content-container").last.inner_text()
    assert site.down_host in text, text
    assert re.search(r"can(not|'t) be reached", text, re.IGNORECASE), text
    assert "ConnectError" not in text, text


def upload_item_works(page: ChatPage) -> bool:
    """Whether "Upload Files" in the input's + menu opens a file chooser (Open WebUI dims it and
    ignores the click for a model whose row says file_upload: false)."""
    page.page.locator("#input-menu-button").click()
    item = page.page.get_by_role("menuitem", name="Upload Files")
    item.wait_for()
    dimmed = "opacity-50" in (item.get_attribute("class") or "")
    try:
        with page.page.expect_file_chooser(timeout=3000):
            item.click()
        opened = True
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: no chooser opened
        opened = False
    page.close_menu()
    assert dimmed != opened, (
        f"Upload Files is {'dimmed' if dimmed else 'bright'} but a chooser {'opened' if opened else 'did not open'}"
    )
    return opened


def test_an_agent_that_reads_documents_shows_the_attach_button_and_no_other_does(site: Site, member: ChatPage) -> None:
    reads = {
        f"aihub_agent_pipe.{lb.blueprint.id}.{agent.id}": "documents" in lb.reads
        for lb in site.catalog.blueprints
        for agent in lb.blueprint.agents
    }
    analyst = "aihub_agent_pipe.document-analyst.default"
    assert reads[analyst], "the sample Document Analyst should read documents"
    other = next(view.model_id for view in site.member_agents() if not reads[view.model_id])
    member.new_chat(analyst)
    assert upload_item_works(member), "the Document Analyst offers no attach button"
    member.new_chat(other)
    assert not upload_item_works(member), f"{other} offers the attach button but reads no documents"


def attach_through_the_plus_menu(page: ChatPage, name: str, mime: str, data: bytes) -> None:
    """Attach a file as a user does: + menu, "Upload Files", the file chooser; then wait until its
    chip in the input has finished uploading (no spinner left)."""
    page.page.locator("#input-menu-button").click()
    with page.page.expect_file_chooser() as chooser:
        page.page.get_by_role("menuitem", name="Upload Files").click()
    chooser.value.set_files({"name": name, "mimeType": mime, "buffer": data})
    page.page.wait_for_function(
        "name => { const form = document.querySelector('#chat-input').closest('form');"
        " return form.innerText.includes(name) && !form.querySelector('.animate-spin'); }",
        arg=name,
    )


def document_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [p for p in content if p.get("type") == "document"] if isinstance(content, list) else []


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content or [] if p.get("type") == "text")


def test_a_file_attached_in_turn_one_still_reaches_the_agent_in_turn_two(site: Site, member: ChatPage) -> None:
    """Issue 19: the Document Analyst's attach button, used as a user does; the next turn carries
    the file again, with its bytes, inside the user message it was attached to."""
    analyst = "aihub_agent_pipe.document-analyst.default"
    data = f"Minutes of {secrets.token_hex(4)}: the office moves on 2026-04-01.\nBring your badge.\n".encode()
    first, second = "Summarise the document I attached.", "And what should I bring?"
    site.agui.clear()
    member.new_chat(analyst)
    attach_through_the_plus_menu(member, "minutes.txt", "text/plain", data)
    member.send(first)
    member.response(AGENT_ANSWER)
    member.wait_done()
    member.send(second)  # nothing attached this time
    member.page.wait_for_function("() => document.querySelectorAll('#response-content-container').length >= 2")
    member.response(AGENT_ANSWER)
    member.wait_done()

    file_ids = set()
    for text, turns in ((first, 1), (second, 2)):
        (run,) = runs_for(site, text)
        users = [m for m in run["messages"] if m.get("role") == "user"]
        assert [message_text(m) for m in users] == [first, second][:turns]
        (part,) = document_parts(users[0])  # in the message it was attached to
        assert base64.b64decode(part["source"]["value"]) == data
        assert part["source"]["mimeType"].startswith("text/plain")
        assert part["metadata"]["filename"] == "minutes.txt" and part["metadata"]["size"] == len(data)
        assert all(not document_parts(m) for m in users[1:])  # and only there
        file_ids.add(part["metadata"]["file_id"])
    assert len(file_ids) == 1, file_ids  # the same stored file both times
    # Agent Framework turned the part into content its model sees, in turn two as well
    digest = hashlib.sha256(data).hexdigest()
    last_call = site.agui.model_calls()[-1]
    seen = [media["sha256"] for m in last_call if m["role"] == "user" for media in m["media"]]
    assert digest in seen, last_call


# --- translations (issue 30): each user reads the agents in their interface language ---------------

# The interface languages a user picks in Settings > General > Language (Open WebUI keeps the pick in
# localStorage `locale`: i18next's cache, src/lib/i18n/index.ts); ja-JP has no translation in the
# samples, so its user reads the agents' default text (the toggles are in Open WebUI's own Japanese).
LANGUAGES = ("de-DE", "fr-FR", "ja-JP")
TRANSLATED_AGENTS = ("aihub_agent_pipe.research-assistant.default", "aihub_agent_pipe.document-analyst.default")


def localized(table: Any, locale: str, key: str, default: Any) -> Any:
    """What Open WebUI 0.12.4 shows (localizedContent.ts): the user's locale, its language, the default."""
    for candidate in dict.fromkeys((locale, locale.split("-")[0])):
        entry = (table or {}).get(candidate)
        value = entry.get(key) if isinstance(entry, dict) else getattr(entry, key, None)
        if value:
            return value
    return default


def expected_in(catalog: Catalog, model_id: str, locale: str) -> dict[str, Any]:
    """An agent's name, description, suggestion cards and toggles (name -> tooltip) in `locale`."""
    from provisioner.toggle_translations import NATIVE_TOGGLE_TRANSLATIONS

    _, bp_id, agent_id = model_id.split(".")
    loaded = next(lb for lb in catalog.blueprints if lb.blueprint.id == bp_id)
    bp = loaded.blueprint
    agent = next(a for a in bp.agents if a.id == agent_id)
    own = agent.suggestions is not None
    cards = (
        localized(agent.i18n, locale, "suggestions", None)
        or (None if own else localized(bp.i18n, locale, "suggestions", None))
        or (agent.suggestions if own else bp.suggestions)
        or []
    )
    description = (
        localized(agent.i18n, locale, "description", None)
        or (None if agent.description else localized(bp.i18n, locale, "description", None))
        or agent.description
        or bp.description
    )
    toggles = {}
    for feature in sorted(loaded.supported_features):
        if is_native(feature):
            table, (title, tooltip) = NATIVE_TOGGLE_TRANSLATIONS.get(feature, {}), NATIVE_LOOK[feature]
            toggles[localized(table, locale, "name", title)] = localized(table, locale, "description", tooltip)
        else:
            definition = catalog.features[feature]
            toggles[localized(definition.i18n, locale, "title", definition.title)] = localized(
                definition.i18n, locale, "description", definition.description
            )
    return {
        "name": localized(agent.i18n, locale, "name", agent.name),
        "description": description,
        "cards": sorted((card.title, card.subtitle) for card in cards),
        "toggles": toggles,
    }


def shown(page: ChatPage, model_id: str) -> dict[str, Any]:
    page.new_chat(model_id)
    heading = page.page.locator("h2").filter(has=page.page.locator("span.line-clamp-1")).first
    heading.wait_for()
    description = page.page.locator("div.markdown.line-clamp-2").first
    return {
        "name": heading.inner_text().strip(),
        "description": description.inner_text().strip() if description.count() else "",
        "cards": sorted(page.suggestion_cards()),
        "toggles": {toggle.name: toggle.description for toggle in page.toggles()},
    }


@pytest.mark.parametrize("locale", LANGUAGES)
def test_each_user_reads_the_agents_and_toggles_in_their_interface_language(
    site: Site, browser: Any, locale: str
) -> None:
    assert any(lb.blueprint.agents[0].i18n for lb in site.catalog.blueprints), "no sample agent is translated"
    pages = logged_in_page(browser, site.owui, login={"email": MEMBER_EMAIL, "password": site.member_password})
    page = next(pages)
    try:
        page.page.evaluate("locale => localStorage.setItem('locale', locale)", locale)
        page.page.goto(page.url + "/")
        page.page.wait_for_selector("#chat-input")
        assert page.page.evaluate("() => document.documentElement.lang") == locale
        problems = []
        for model_id in TRANSLATED_AGENTS:
            want, got = expected_in(site.catalog, model_id, locale), shown(page, model_id)
            for key in want:
                if want[key] != got[key]:
                    problems.append(f"{model_id} in {locale}: {key} {got[key]!r}, expected {want[key]!r}")
        if problems:
            page.save_artifacts(f"i18n-{locale}")
        assert not problems, "\n".join(problems)
        research = expected_in(site.catalog, TRANSLATED_AGENTS[0], locale)
        english = expected_in(site.catalog, TRANSLATED_AGENTS[0], "en-US")
        if locale == "ja-JP":  # nobody translated the agents into Japanese: the default shows
            assert {k: research[k] for k in ("name", "description", "cards")} == {
                k: english[k] for k in ("name", "description", "cards")
            }
        else:  # what the page showed is the translation, not the default text a fallback shows
            assert all(research[k] != english[k] for k in ("name", "description", "cards")), research
            assert not set(research["toggles"].items()) & set(english["toggles"].items()), research["toggles"]
    finally:
        next(pages, None)
