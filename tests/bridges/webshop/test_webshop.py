"""The web shop bridge in a real headless Chromium: contract, tools, episodes, harnesses, rig."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from envharness import (
    Action,
    BridgeError,
    DependencyNotInstalled,
    EpisodeError,
    Evaluation,
    InvalidActionError,
    load_bridge,
)
from envharness.bridges.webshop import oracle
from envharness.bridges.webshop.browser import BrowserEnv
from envharness.bridges.webshop.catalogue import load_catalogue
from envharness.bridges.webshop.driver import CHROMIUM_ENV, browser_thread, chromium_path
from envharness.bridges.webshop.env import WebShopEnv
from envharness.bridges.webshop.pages import render
from envharness.bridges.webshop.server import shared_server
from envharness.harness import Rules, Setups
from envharness.rollout import OraclePolicy, RandomPolicy, rollout
from envharness.testing import check_bridge

LIP_BALM = "ws12"  # vegan lip balm, berry flavour, < $10: search, open, choose, buy (4 steps)
SHOES = "ws01"  # waterproof women's trail shoes, teal, size 8, < $100 (5 steps)
SHOP = load_catalogue()


def _browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the webshop bridge needs its extra: pip install 'envharness[web]'"
    try:
        chromium_path()
    except BridgeError as e:
        return f"the webshop bridge needs Chromium: {e}"
    return None


@pytest.fixture(scope="module")
def browser_ready() -> None:
    reason = _browser_missing()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def make(browser_ready):
    made: list[WebShopEnv] = []

    def build(task_id: str = LIP_BALM, **options) -> WebShopEnv:
        env = load_bridge("webshop", task_id=task_id, **options)
        made.append(env)
        return env

    yield build
    for env in made:
        env.close()


def click(ref: int) -> Action:
    return Action("click", {"ref": ref})


def search(text: str, ref: int = 1) -> Action:
    return Action("type", {"ref": ref, "text": text, "submit": True})


# -- the contract ---------------------------------------------------------------------------------


def test_check_bridge(make):
    env = make()
    report = check_bridge(env)
    assert report.bridge == "webshop" and len(report.actions) == 4
    assert report.actions[0].tool == "type" and report.actions[-1] == click(6)


def test_reset_and_state(make):
    env = make(SHOES, max_steps=12)
    with pytest.raises(EpisodeError, match="call reset"):
        env.step(Action("read_page"))
    with pytest.raises(EpisodeError, match="call reset"):
        env.observe()
    assert env.evaluate().to_dict() == {
        "success": False,
        "score": 0.0,
        "details": {"started": False},
    }
    observation, info = env.reset(seed=5)
    assert observation.splitlines()[:2] == ["URL: /", "Title: Pinecrest Market - Search"]
    assert '[1] textbox "Search" value=""' in observation and '[2] button "Search"' in observation
    assert info == {"url": "/"} and env.observe() == observation
    state = env.get_env_state()
    assert set(state) == set(env.env_state_schema()["properties"])
    assert state["page"] == "home" and state["steps"] == 0 and state["purchased"] is None
    assert [e["role"] for e in state["elements"]] == ["textbox", "button"]
    assert env.instruction.startswith(f"Instruction: {SHOP.tasks[SHOES].instruction}")
    assert env.bridge_options() == {"max_steps": 12} and env.max_steps == 12
    assert [t.name for t in env.tools()] == ["goto", "click", "type", "select", "back", "read_page"]
    with pytest.raises(InvalidActionError, match="unknown tool"):
        env.step(Action("scroll", {}))
    with pytest.raises(InvalidActionError, match="ref"):
        env.step(Action("click", {"ref": "three"}))


def test_browser_refs_match_the_planner(make):
    """The in-page numbering and the oracle's HTML numbering agree on every kind of page."""
    env = make()
    env.reset()
    for url in ("/", "/search?q=waterproof", "/search?q=waterproof&page=2", "/item/p075?q=x"):
        env.step(Action("goto", {"url": url}))
        got = [(e["ref"], e["href"]) for e in env.get_env_state()["elements"]]
        planned = [(r.ref, r.href) for r in oracle.page_refs(render(SHOP, url).html)]
        assert got == planned, url


def test_tools_and_invalid_actions(make):
    env = make()
    env.reset()
    result = env.step(search("honeycomb lip balm"))
    assert result.observation.startswith('Typed "honeycomb lip balm" into [1] and pressed Enter.')
    assert env.get_env_state()["page"] == "results" and "invalid_action" not in result.info
    result = env.step(click(99))
    assert "there is no element [99]" in result.info["invalid_action"]
    assert result.observation.startswith("Cannot do click(ref=99): there is no element [99]")
    assert "\nURL: /search?q=honeycomb+lip+balm" in result.observation
    result = env.step(Action("type", {"ref": 1, "text": "x"}))  # [1] is a link here
    assert "is a link, not a text box" in result.info["invalid_action"]
    result = env.step(Action("select", {"ref": 2, "option": "mint"}))
    assert "not a select" in result.info["invalid_action"]
    for url in ("https://example.com/", "file:///etc/passwd", "javascript:alert(1)"):
        result = env.step(Action("goto", {"url": url}))
        assert result.info["invalid_action"].startswith(f"cannot go to {url!r}")
    assert env.get_env_state()["page"] == "results"  # nothing moved
    result = env.step(Action("goto", {"url": "item/p043"}))  # relative to the page
    assert result.info == {"url": "/item/p043"} and result.observation.startswith("Went to")
    result = env.step(Action("back"))
    assert result.observation.startswith("Went back to /search?q=honeycomb+lip+balm")
    assert env.step(Action("read_page")).observation == env.observe()
    state = env.get_env_state()
    assert state["steps"] == 10 and state["last_action"] == "read_page()"
    fresh = make()
    fresh.reset()
    result = fresh.step(Action("back"))
    assert result.info["invalid_action"] == "there is no previous page to go back to"


def test_the_browser_cannot_reach_other_hosts(make):
    env = make()
    env.reset()
    probe = "() => fetch('http://example.com/x').then(() => 'fetched', () => 'blocked')"
    thread = browser_thread()
    assert thread.call(lambda: env._session._page.evaluate(probe)) == "blocked"
    local = f"() => fetch('{shared_server().url}/').then(r => String(r.status))"
    assert thread.call(lambda: env._session._page.evaluate(local)) == "200"


def test_buying_ends_the_episode(make):
    env = make()
    env.reset()
    results = [env.step(a) for a in env.oracle_actions()]
    assert [r.terminated for r in results] == [False, False, False, True]
    assert [r.reward for r in results] == [0.0, 0.0, 0.0, 1.0]
    assert "Thank you for your order!" in results[-1].observation
    state = env.get_env_state()
    assert state["done"] and state["purchased"] == {
        "product_id": "p043",
        "options": {"flavor": "berry"},
    }
    evaluation = env.evaluate()
    assert evaluation.success and evaluation.details["purchased"]["product_id"] == "p043"
    assert env.oracle_actions() == []
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(Action("read_page"))
    env.close()
    env.close()
    assert env.evaluate().success and env.get_env_state()["done"]  # still readable
    with pytest.raises(EpisodeError, match="closed"):
        env.step(Action("read_page"))
    env.reset()
    assert env.evaluate().success is False and env.get_env_state()["steps"] == 0


def test_a_wrong_purchase_scores_part(make):
    env = make()
    env.reset()
    env.step(search("honeycomb beeswax lip balm"))
    env.step(click(2))  # the beeswax balm, not vegan
    state = env.get_env_state()
    assert state["product_id"] == "p042" and state["selected_options"] == {}
    mint = next(e["ref"] for e in state["elements"] if e["name"] == "mint")
    env.step(click(mint))
    assert env.get_env_state()["selected_options"] == {"flavor": "mint"}
    buy = next(e["ref"] for e in env.get_env_state()["elements"] if e["name"] == "Buy Now")
    result = env.step(click(buy))
    assert result.terminated and result.reward == pytest.approx(1 / 3)
    details = env.evaluate().details
    assert details["attributes"] == {"vegan": False} and details["options"] == {"flavor": False}


def test_oracle_follows_the_current_state(make):
    env = make(SHOES)
    env.reset()
    for action in (search("trail running shoes"), click(4)):  # the men's shoe
        env.step(action)
    plan = env.oracle_actions()
    assert plan[0] == click(1)  # back to search first
    for action in plan:
        result = env.step(action)
    assert result.terminated and env.evaluate().success


def test_save_and_restore(make):
    env = make()
    env.reset()
    for action in (search("vegan lip balm"), click(99), click(2)):
        env.step(action)
    saved = json.loads(json.dumps(env.save_state()))
    assert saved["bridge"] == "webshop" and len(saved["actions"]) == 3
    clone = WebShopEnv.from_state(saved)
    try:
        assert clone.get_env_state() == env.get_env_state()
        assert clone.observe() == env.observe()
        assert clone.oracle_actions() == env.oracle_actions()
    finally:
        clone.close()
    fresh = WebShopEnv.from_state(make().save_state())
    with pytest.raises(EpisodeError):
        fresh.observe()
    with pytest.raises(BridgeError, match="missing key"):
        WebShopEnv.from_state({"bridge": "webshop"})
    with pytest.raises(BridgeError, match="'bridge' is 'textworld'"):
        WebShopEnv.from_state({**saved, "bridge": "textworld"})
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['speed'\]"):
        WebShopEnv.from_state({**saved, "options": {"speed": 2}})
    with pytest.raises(BridgeError, match="'actions' must be a list"):
        WebShopEnv.from_state({**saved, "actions": "click"})
    with pytest.raises(BridgeError, match="does not reproduce"):
        WebShopEnv.from_state({**saved, "observation": "something else"})


# -- episodes -------------------------------------------------------------------------------------


def test_oracle_episode_succeeds(make):
    trajectory = rollout(make(SHOES), OraclePolicy(1.0, seed=0), seed=0)
    assert trajectory.success and trajectory.end_reason == "terminated"
    assert trajectory.n_steps == 5 and trajectory.evaluation.score == 1.0


def test_random_episode_runs(make):
    trajectory = rollout(make("ws19"), RandomPolicy(seed=3), max_steps=20, seed=0)
    assert trajectory.error is None
    assert trajectory.end_reason in ("budget", "terminated")
    assert 1 <= trajectory.n_steps <= 20


def test_envs_work_from_other_threads(make):
    """Playwright's sync API is thread-bound; the bridge's browser thread makes that invisible."""
    first, second = make(), make(SHOES)
    first.reset()  # built and reset here, stepped in a worker thread
    outcomes: dict[str, object] = {}

    def play(name: str, env: WebShopEnv, reset: bool) -> None:
        try:
            if reset:
                env.reset()
            for action in env.oracle_actions():
                env.step(action)
            outcomes[name] = env.evaluate().success
        except Exception as e:  # reported below
            outcomes[name] = e

    workers = [
        threading.Thread(target=play, args=("first", first, False)),
        threading.Thread(target=play, args=("second", second, True)),
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert outcomes == {"first": True, "second": True}
    with pytest.raises(BridgeError, match="bound to one thread"):
        browser_thread().browser(chromium_path())


def test_a_dropped_env_gives_its_context_back(make):
    import gc

    thread = browser_thread()
    contexts = lambda: thread.call(lambda: len(thread.browser(chromium_path()).contexts))  # noqa: E731
    before = contexts()
    env = load_bridge("webshop", task_id=LIP_BALM)
    env.reset()
    assert contexts() == before + 1
    del env
    gc.collect()
    assert contexts() == before  # the finalizer's close ran before this call on the thread


# -- harnesses ------------------------------------------------------------------------------------


def test_stage_candidates_mislead_but_stay_solvable(make):
    env = make(SHOES)
    stages = env.stage_candidates()
    assert stages == make(SHOES).stage_candidates() and len(stages) == 4
    # all four are replayed without a browser in test_webshop_shop.py; two here, for real
    decoy = Setups(make(SHOES), stages[1])  # a look-alike product's page
    observation, info = decoy.reset()
    state = decoy.get_env_state()
    assert info["setup_steps"] == 2 and state["page"] == "item" and state["product_id"] != "p001"
    assert state["steps"] == 0 and not state["done"] and observation == decoy.unwrapped.observe()
    assert state["last_action"] == "" and not observation.startswith("Clicked")  # a start
    wrong = Setups(make(SHOES), stages[2])  # the target, with the wrong size chosen
    wrong.reset()
    state = wrong.get_env_state()
    assert (state["product_id"], state["selected_options"]) == ("p001", {"size": "6"})
    trajectory = rollout(wrong, OraclePolicy(1.0), seed=0)
    assert trajectory.success and trajectory.n_steps == 3  # size 8, teal, buy


BLOCK_GOTO = """
class _Rules:
    def filter_action(self, action, state):
        if action["tool"] == "goto":
            return "Typing addresses is disabled: use the links and buttons of the page."
        return action
"""

HIDE_PRICES = """
import re

class _Rules:
    def filter_observation(self, observation, state):
        return re.sub(r"\\$[0-9]+\\.[0-9][0-9]", "$??", observation)
"""


def test_rules_block_goto(make):
    env = Rules(make(), BLOCK_GOTO)
    try:
        env.reset()
        result = env.step(Action("goto", {"url": "/item/p043"}))
        assert result.info.get("blocked") is True and "disabled" in result.observation
        assert env.get_env_state()["steps"] == 0 and env.get_env_state()["page"] == "home"
        assert rollout(env, OraclePolicy(1.0), close=False).success  # the oracle never needs goto
    finally:
        env.close()


def test_rules_hide_prices(make):
    env = Rules(make(), HIDE_PRICES)
    try:
        env.reset()
        result = env.step(search("lip balm"))
        assert "$??" in result.observation and "$9.00" not in result.observation
        assert "$9.00" in env.unwrapped.observe()
    finally:
        env.close()


# -- the generic browser bridge -------------------------------------------------------------------


def on_results_page(page) -> Evaluation:
    """A module-level verifier: success once a results page is open."""
    found = "/search?" in page.url
    return Evaluation(found, float(found), {"title": page.title})


def test_browser_env_with_a_verifier_function(browser_ready):
    env = BrowserEnv(shared_server().url + "/", "Search for a tea kettle.", on_results_page)
    try:
        env.reset()
        assert not env.evaluate().success and env.bridge_name == "browser"
        with pytest.raises(BridgeError, match="no oracle"):
            env.oracle_actions()
        result = env.step(search("tea kettle"))
        assert (result.terminated, result.reward) == (True, 1.0)
        clone = BrowserEnv.from_state(json.loads(json.dumps(env.save_state())))
        try:
            assert clone.get_env_state() == env.get_env_state() and clone.evaluate().success
        finally:
            clone.close()
        saved = env.save_state()
        assert saved["verifier"] == f"{__name__}:on_results_page"
    finally:
        env.close()
    closure = BrowserEnv(shared_server().url, "x", lambda page: on_results_page(page))
    with pytest.raises(BridgeError, match="importable functions"):
        closure.save_state()


FORM_PAGE = b"""<!DOCTYPE html><html><head><title>Form</title></head><body>
<h1>Order form</h1>
<div hidden><a href="/secret">Hidden link</a></div>
<form action="/sent" method="get">
<label for="qty">Quantity</label>
<select id="qty" name="qty"><option>one</option><option>two</option></select>
<label><input type="checkbox" name="gift" value="yes"> Gift wrap</label>
<input type="hidden" name="token" value="x">
<textarea name="note" aria-label="Note"></textarea>
<button type="submit">Send</button>
</form>
<a href="/sent?qty=popup" target="_blank">Open in a new tab</a>
</body></html>"""


@pytest.fixture(scope="module")
def form_site():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = FORM_PAGE if self.path == "/" else f"<title>Sent</title>{self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def sent_with_two(page) -> Evaluation:
    """A module-level verifier: the form was sent with two, gift-wrapped."""
    ok = "/sent?qty=two&gift=yes" in page.url
    return Evaluation(ok, float(ok), {})


def test_browser_env_fills_a_form(browser_ready, form_site):
    env = BrowserEnv(form_site, "Order two, gift-wrapped.", sent_with_two, done=sent_with_two)
    try:
        observation, _ = env.reset()
        assert "Hidden link" not in observation and "token" not in observation
        assert observation.splitlines()[3:] == [
            "Order form",
            "Quantity",
            '[1] select "Quantity" options: one | two (chosen: "one")',
            '[2] checkbox "Gift wrap"',
            "Gift wrap",
            '[3] textbox "Note" value=""',
            '[4] button "Send"',
            '[5] link "Open in a new tab"',
        ]
        refs = {e["name"]: e["ref"] for e in env.get_env_state()["elements"]}
        result = env.step(Action("select", {"ref": refs["Quantity"], "option": "TWO"}))
        assert result.observation.startswith('Selected "two"')
        bad = env.step(Action("select", {"ref": refs["Quantity"], "option": "three"}))
        assert bad.info["invalid_action"].endswith("its options: one | two")
        env.step(click(refs["Gift wrap"]))
        gift = next(e for e in env.get_env_state()["elements"] if e["name"] == "Gift wrap")
        assert gift["selected"] is True
        note = env.step(Action("type", {"ref": refs["Note"], "text": "for mum"}))
        assert note.observation.startswith('Typed "for mum" into') and not note.terminated
        assert any(e["value"] == "for mum" for e in env.get_env_state()["elements"])
        result = env.step(click(refs["Send"]))
        assert result.terminated and result.reward == 1.0
        assert env.get_env_state()["url"].startswith("/sent?qty=two&gift=yes")
        env.reset()
        result = env.step(click(5))  # target=_blank opens in the same tab
        assert env.get_env_state()["url"] == "/sent?qty=popup" and not result.terminated
    finally:
        env.close()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("https://example.com/", "x", on_results_page), "not reachable"),
        (("ftp://127.0.0.1/", "x", on_results_page), "only http and https"),
        (("http://127.0.0.1/", " ", on_results_page), "instruction: expected a non-empty str"),
        (("http://127.0.0.1/", "x", "no_module_here:f"), "cannot import 'no_module_here:f'"),
        (("http://127.0.0.1/", "x", 42), "expected a callable"),
    ],
)
def test_browser_env_bad_arguments(browser_ready, args, match):
    with pytest.raises(BridgeError, match=match):
        BrowserEnv(*args)


# -- missing pieces -------------------------------------------------------------------------------


def test_missing_chromium_says_how_to_install(monkeypatch, tmp_path):
    pytest.importorskip("playwright", reason="the webshop bridge needs its extra")
    monkeypatch.setenv(CHROMIUM_ENV, str(tmp_path / "chromium"))
    with pytest.raises(BridgeError, match=r"ENVHARNESS_CHROMIUM.*apt-get install -y chromium"):
        WebShopEnv(LIP_BALM)
    (tmp_path / "chromium").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "chromium").chmod(0o755)
    assert chromium_path() == str(tmp_path / "chromium")
    env = WebShopEnv(LIP_BALM)  # a broken executable fails at launch, with the same advice
    with pytest.raises(BridgeError, match="failed to launch.*apt-get install -y chromium"):
        env.reset()


def test_missing_playwright_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright", None)  # `import playwright` now fails
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    with pytest.raises(DependencyNotInstalled, match=r"envharness\[web\]"):
        load_bridge("webshop", task_id=LIP_BALM)


# -- the rigger -----------------------------------------------------------------------------------


def test_rig_two_tasks(browser_ready, tmp_path):
    pytest.importorskip("langgraph", reason="the rigger needs the 'rigger' extra")
    from envharness.graph.context import RiggerContext
    from envharness.graph.run import rig

    context = RiggerContext(
        run_dir=str(tmp_path),
        policy="oracle:0.5",
        objective="auto",
        k_observe=1,  # a smoke test: every reset opens a fresh browser context (~0.3 s)
        k_validate=1,
        max_iterations=1,
        siblings=["ws07"],
    )
    tasks = [LIP_BALM, "ws08"]
    results = rig("webshop", tasks, context, bridge_options={"max_steps": 5}, max_concurrency=2)
    assert [r.task_id for r in results] == tasks
    assert all(r.status in ("accepted", "rejected", "undecided") for r in results), results
    assert all(r.rollouts >= 2 for r in results)  # baseline and validation
    assert (tmp_path / "trajectories" / "trajectories.jsonl").exists()
    for result in results:
        if result.status == "accepted":
            assert Path(result.accepted).exists()


# -- task fingerprint ---------------------------------------------------------------------------


def test_task_fingerprint_covers_the_task_and_the_products(make, monkeypatch):
    import dataclasses

    from envharness.bridges.webshop import env as env_module

    env = make()
    fingerprint = env.task_fingerprint()
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    env.reset()
    assert env.task_fingerprint() == fingerprint
    assert make(max_steps=5, timeout_ms=5_000).task_fingerprint() == fingerprint
    assert make(SHOES).task_fingerprint() != fingerprint
    # a cheaper look-alike is other data for the verifier, though the task is unchanged
    products = dict(SHOP.products)
    first = next(iter(products))
    products[first] = dataclasses.replace(products[first], price=products[first].price + 1)
    monkeypatch.setattr(
        env_module, "load_catalogue", lambda: dataclasses.replace(SHOP, products=products)
    )
    assert make().task_fingerprint() != fingerprint
