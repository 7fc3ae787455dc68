"""The web shop without a browser: data, search, pages, server, reward, oracle and stages."""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest

from envharness import BridgeError, UnknownTaskError, list_tasks
from envharness.bridges.webshop import oracle
from envharness.bridges.webshop.catalogue import load_catalogue, parse_catalogue, tokens
from envharness.bridges.webshop.env import WebShopEnv
from envharness.bridges.webshop.page_text import PageSnapshot, display_url
from envharness.bridges.webshop.pages import PAGE_SIZE, Location, locate, render, search_url
from envharness.bridges.webshop.reward import ShopVerifier, purchase_reward, type_match
from envharness.bridges.webshop.server import ShopServer, shared_server

SHOP = load_catalogue()


def snapshot_at(url: str) -> PageSnapshot:
    return PageSnapshot(url, "", ())


# -- data -----------------------------------------------------------------------------------------


def test_catalogue_size_and_splits():
    assert len(SHOP.products) >= 80 and len(SHOP.tasks) >= 20
    assert len({p.category for p in SHOP.products.values()}) == 6
    train, test = WebShopEnv.list_tasks("train"), WebShopEnv.list_tasks("test")
    assert (len(train), len(test)) == (16, 8) and not set(train) & set(test)
    assert WebShopEnv.list_tasks("all") == train + test == list_tasks("webshop", "all")
    with pytest.raises(UnknownTaskError, match="valid splits: train, test, all"):
        WebShopEnv.list_tasks("dev")
    with pytest.raises(BridgeError, match=r"unknown option\(s\) \['seed'\]"):
        WebShopEnv.list_tasks("train", seed=1)


@pytest.mark.parametrize("task_id", sorted(SHOP.tasks))
def test_every_task_is_solvable_and_has_a_trap(task_id):
    task = SHOP.tasks[task_id]
    target = SHOP.products[task.target]
    assert set(task.attributes) <= set(target.attributes)
    assert all(target.option_value(k, v) for k, v in task.options.items())
    assert f"{task.price_upper:.2f} dollars" in task.instruction
    assert purchase_reward(task, SHOP, target.id, task.options).success
    # a product of the same type that does not fit (wrong attribute or over budget)
    look_alikes = [p for p in SHOP.products.values() if p.type == target.type and p.id != target.id]
    assert any(not purchase_reward(task, SHOP, p.id, task.options).success for p in look_alikes)


def test_malformed_data_is_reported():
    good_products = {"products": [dict(p.__dict__, options={}) for p in SHOP.products.values()]}
    with pytest.raises(BridgeError, match="'products' list"):
        parse_catalogue({"items": []}, {"tasks": []})
    with pytest.raises(BridgeError, match="'tasks' list"):
        parse_catalogue(good_products, [])
    with pytest.raises(BridgeError, match="product .*KeyError"):
        parse_catalogue({"products": [{"id": "x"}]}, {"tasks": []})
    bad_task = {
        "id": "t",
        "split": "train",
        "target": "p999",
        "instruction": "x",
        "attributes": [],
        "options": {},
        "price_upper": 1,
    }
    with pytest.raises(BridgeError, match="unknown target product 'p999'"):
        parse_catalogue(good_products, {"tasks": [bad_task]})
    with pytest.raises(BridgeError, match="split 'dev'"):
        parse_catalogue(good_products, {"tasks": [{**bad_task, "target": "p001", "split": "dev"}]})


# -- search and pages -----------------------------------------------------------------------------


def test_tokens_and_search():
    assert tokens("I need Boots, size 8!") == ["boot", "size", "8"]
    assert SHOP.search("") == [] and SHOP.search("zeppelin") == []
    found = [p.id for p in SHOP.search("insulated water bottle straw lid")]
    assert found[0] == "p030" and "p029" in found
    for task in SHOP.tasks.values():  # the oracle's query puts the target first
        target = SHOP.products[task.target]
        assert SHOP.search(oracle.search_query(target))[0] is target


def test_locate_reads_the_url():
    assert locate(SHOP, "/") == Location("home")
    assert locate(SHOP, "http://127.0.0.1:1/search?q=+tea++kettle&page=x") == Location(
        "results", "tea kettle", 1
    )
    item = locate(SHOP, "/item/p001?q=shoes&page=2&size=8&color=PINK&size=9&bogus=1")
    assert (item.kind, item.product_id, item.page) == ("item", "p001", 2)
    assert item.options == {"size": "9"}  # the last value wins; unknown values are dropped
    assert locate(SHOP, "/buy/p001?color=Teal").options == {"color": "teal"}
    assert locate(SHOP, "/item/p999").kind == "not_found"
    assert locate(SHOP, "/admin").kind == "not_found"


def test_results_pages():
    query = "waterproof"
    found = SHOP.search(query)
    assert len(found) > PAGE_SIZE
    first = render(SHOP, search_url(query))
    assert "Next &gt;" in first.html and "&lt; Prev" not in first.html
    assert f"Page 1 of 2 ({len(found)} products)" in first.html
    assert first.title == 'Pinecrest Market - Results for "waterproof" (page 1)'
    last = render(SHOP, search_url(query, 99))  # clamped to the last page
    assert "Page 2 of 2" in last.html and "&lt; Prev" in last.html and "Next" not in last.html
    assert "No products match" in render(SHOP, search_url("zeppelin")).html


def test_item_and_order_pages():
    page = render(SHOP, "/item/p001?q=trail&page=1&size=8")
    assert page.status == 200 and page.location.kind == "item"
    assert "aria-pressed='true'>8</a>" in page.html and "Price: $84.00" in page.html
    assert "href='/buy/p001?size=8'" in page.html and "&lt; Back to results" in page.html
    done = render(SHOP, "/buy/p001?size=8&color=teal")
    assert done.title.endswith("Order placed") and "size: 8, color: teal" in done.html
    missing = render(SHOP, "/item/nope")
    assert missing.status == 404 and "Back to Search" in missing.html


def test_page_refs_number_interactive_elements():
    refs = oracle.page_refs(render(SHOP, "/").html)
    assert [(r.ref, r.tag, r.input_name, r.form_action) for r in refs] == [
        (1, "input", "q", "/search"),
        (2, "button", None, None),
    ]
    item = oracle.page_refs(render(SHOP, "/item/p014?q=slippers").html)
    assert [r.text for r in item][:3] == ["Back to Search", "< Back to results", "small"]
    assert item[-1].text == "Buy Now" and item[-1].href == "/buy/p014"
    hidden = oracle.page_refs("<input type='hidden' name='a'><a>no href</a><a href='/x'>x</a>")
    assert [(r.ref, r.href) for r in hidden] == [(1, "/x")]


# -- the server -----------------------------------------------------------------------------------


def test_server_serves_the_pages():
    server = shared_server()
    assert shared_server() is server and server.url.startswith("http://127.0.0.1:")
    with urlopen(server.url + "/search?" + urlencode({"q": "french press"})) as answer:
        body = answer.read().decode()
        assert answer.status == 200 and "text/html" in answer.headers["Content-Type"]
    assert "Brewhaus Glass French Press" in body
    with urlopen(Request(server.url + "/item/p001", method="HEAD")) as answer:
        assert answer.status == 200 and answer.read() == b""
    with urlopen(server.url + "/favicon.ico") as answer:
        assert answer.status == 204
    with pytest.raises(HTTPError) as caught:
        urlopen(server.url + "/nowhere")
    assert caught.value.code == 404
    with pytest.raises(HTTPError) as caught:
        urlopen(Request(server.url + "/", data=b"x", method="POST"))
    assert caught.value.code == 501


def test_a_server_can_be_closed():
    server = ShopServer()
    assert server.running
    server.close()
    server.close()
    assert not server.running


# -- the reward -----------------------------------------------------------------------------------


def test_reward_formula():
    task = SHOP.tasks["ws01"]  # waterproof, for women; size 8, teal; <= $100
    right = {"size": "8", "color": "teal"}
    assert purchase_reward(task, SHOP, "p001", right).score == 1.0
    assert purchase_reward(task, SHOP, "p001", {"SIZE": " 8 ", "color": "Teal"}).success
    wrong = purchase_reward(task, SHOP, "p001", {"size": "9", "color": "teal"})
    assert (wrong.success, wrong.score) == (False, 0.8)
    assert wrong.details["options"] == {"size": False, "color": True}
    men = purchase_reward(task, SHOP, "p002", {"size": "8", "color": "teal"})
    assert men.score == 0.6  # not for women, no teal: 3/5
    assert men.details["attributes"] == {"waterproof": True, "for women": False}
    road = purchase_reward(task, SHOP, "p006", right)  # same category, other type: r_type 0.5
    assert road.details["r_type"] == 0.5 and road.score == pytest.approx(0.5 * 3 / 5)
    assert type_match(task, SHOP, "p063") == 0.0  # a sleeping bag
    assert type_match(SHOP.tasks["ws15"], SHOP, "p084") == 0.1  # laptop sleeve for a backpack


def test_verifier_reads_the_order_page():
    verify = ShopVerifier(SHOP.tasks["ws01"], SHOP)
    assert verify(snapshot_at("http://127.0.0.1:1/item/p001?size=8")).to_dict() == {
        "success": False,
        "score": 0.0,
        "details": {"purchased": None},
    }
    assert not verify.is_done(snapshot_at("http://127.0.0.1:1/search?q=buy"))
    bought = snapshot_at("http://127.0.0.1:1/buy/p001?size=8&color=teal")
    assert verify.is_done(bought) and verify(bought).success
    assert verify(bought).details["purchased"]["options"] == {"size": "8", "color": "teal"}


# -- the oracle and the stages --------------------------------------------------------------------


def _end_of(url: str, actions) -> str:
    for action in actions:
        url = oracle.simulate(SHOP, url, action)
        assert url is not None, action
    return url


@pytest.mark.parametrize("task_id", sorted(SHOP.tasks))
def test_oracle_and_stages_solve_every_task(task_id):
    task = SHOP.tasks[task_id]
    plan = oracle.plan(SHOP, task, "/")
    assert plan[0].tool == "type" and 3 <= len(plan) <= 5
    end = locate(SHOP, _end_of("/", plan))
    assert purchase_reward(task, SHOP, end.product_id, end.options).success
    stages = oracle.stage_candidates(SHOP, task)
    assert len(stages) >= 3
    for stage in stages:
        start = _end_of("/", stage)
        assert locate(SHOP, start).kind in ("results", "item")
        rest = oracle.plan(SHOP, task, start)
        end = locate(SHOP, _end_of(start, rest))
        assert purchase_reward(task, SHOP, end.product_id, end.options).success
    assert oracle.plan(SHOP, task, "/buy/p001") == []


def test_oracle_recovers_from_anywhere():
    task = SHOP.tasks["ws03"]
    for start in ("/nowhere", "/item/p008?q=boots", "/search?q=kettle&page=2"):
        plan = oracle.plan(SHOP, task, start)
        assert plan[0].args == {"ref": 1}  # Back to Search
        assert locate(SHOP, _end_of(start, plan)).product_id == task.target


# -- page text ------------------------------------------------------------------------------------


def test_page_view():
    snap = PageSnapshot.from_js(
        {
            "url": "http://127.0.0.1:5/item/p001?size=8",
            "title": "T",
            "items": [
                {"kind": "text", "text": "size:"},
                {"kind": "element", "ref": 1, "role": "button", "name": "8", "selected": True},
                {
                    "kind": "element",
                    "ref": 2,
                    "role": "select",
                    "name": "Qty",
                    "value": "2",
                    "options": ["1", "2"],
                },
                {"kind": "element", "ref": 3, "role": "button", "name": "Buy", "disabled": True},
                {"kind": "text", "text": "x" * 400},
            ],
        }
    )
    lines = snap.view("http://127.0.0.1:5/").splitlines()
    assert lines[:4] == ["URL: /item/p001?size=8", "Title: T", "", "size:"]
    assert lines[4] == '[1] button "8" (selected)'
    assert lines[5] == '[2] select "Qty" options: 1 | 2 (chosen: "2")'
    assert lines[6] == '[3] button "Buy" (disabled)'
    assert lines[7].endswith("...") and len(lines[7]) == 300
    assert snap.element(2).options == ("1", "2") and snap.element(9) is None
    assert snap.text.startswith("size:\nxxx")
    assert display_url("https://127.0.0.1:5/a", "http://127.0.0.1:5/") == "https://127.0.0.1:5/a"
    assert PageSnapshot("about:blank", "", ()).body() == "(the page is empty)"


# -- construction errors (no browser needed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("task_id", "match"),
    [("ws99", "no task 'ws99'; tasks are ws01, ws02"), (3, "no task 3")],
)
def test_unknown_task(task_id, match):
    with pytest.raises(UnknownTaskError, match=match) as caught:
        WebShopEnv(task_id)
    assert "list_tasks" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"max_steps": 0}, "max_steps: expected a positive int, got 0"),
        ({"timeout_ms": True}, "timeout_ms: expected a positive int"),
        ({"chromium": 3}, "chromium: expected a path, got int"),
        ({"chromium": "/no/such/chromium"}, "apt-get install -y chromium"),
    ],
)
def test_bad_options(options, match):
    pytest.importorskip("playwright", reason="the webshop bridge needs its extra")
    with pytest.raises(BridgeError, match=match):
        WebShopEnv("ws01", **options)


def test_importing_the_bridge_does_not_import_playwright():
    code = (
        "import sys, json\n"
        "from envharness.bridges import get_bridge\n"
        "cls = get_bridge('webshop')\n"
        "print(json.dumps([cls.list_tasks('test'), 'playwright' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    tasks, imported = json.loads(out.stdout)
    assert tasks[0] == "ws17" and imported is False
