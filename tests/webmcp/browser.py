"""Drives a real Chromium through Playwright against a Toolmark WebMCP app.

Usage: browser.py SCENARIO BASE_URL CHROMIUM

Each scenario asserts what the browser shows and prints one JSON line
(`RESULT {...}`) for the Rust test to check the app's side.
"""

import asyncio
import json
import sys

from playwright.async_api import async_playwright

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CANARY = ["4929518355723187", "918273"]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def wait_for(fn, what, timeout=10.0):
    """Poll `fn` (async) until it returns a truthy value."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = await fn()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what} (last: {value!r})")
        await asyncio.sleep(0.05)


async def names(page):
    return sorted(t["name"] for t in await page.webmcp.tools())


async def no_secret_in_dom(page, console):
    """The page's DOM (markup, every form value, the text) and its console."""
    dom = await page.content()
    values = await page.evaluate(
        "() => [...document.querySelectorAll('input, textarea')].map(e => e.value).join('\\n')"
    )
    text = await page.evaluate("() => document.body.innerText")
    everything = "\n".join([dom, values, text] + console)
    for secret in CANARY:
        check(secret not in everything, f"secret {secret} in the page")
    return len(everything)


async def launch(p, webmcp=True):
    args = FLAGS + (["--enable-features=WebMCP"] if webmcp else [])
    return await p.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)


def open_page_console(page):
    console = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    return console


async def example(p, base):
    """The example app: list, read, invalid, the dialog, the scope button."""
    browser = await launch(p)
    page = await browser.new_page()
    console = open_page_console(page)
    await page.goto(base + "/")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    tools = {t["name"]: t for t in await page.webmcp.tools()}
    check(
        sorted(tools) == ["premium.upgrade", "todos.add", "todos.clear", "todos.list"],
        f"tools: {sorted(tools)}",
    )
    check(tools["todos.list"]["annotations"].get("readOnly") is True, tools["todos.list"])
    check(tools["todos.clear"]["annotations"].get("consequential") is True, tools["todos.clear"])
    check(tools["premium.upgrade"]["annotations"].get("consequential") is True, tools["premium.upgrade"])
    check(not tools["todos.add"].get("annotations", {}).get("readOnly"), tools["todos.add"])
    schema = tools["premium.upgrade"]["inputSchema"]
    check(schema["properties"]["card_number"]["writeOnly"] is True, schema)
    check(schema["required"] == ["plan", "card_number"], schema)
    check(tools["todos.add"]["inputSchema"]["properties"]["title"]["type"] == "string", tools["todos.add"])
    check(tools["todos.list"]["description"] == "List the to-dos.", tools["todos.list"])

    r = await page.webmcp.call_tool("todos.add", {"title": "milk"})
    check(r["isError"] is False and r["structuredContent"]["title"] == "milk", r)
    r = await page.webmcp.call_tool("todos.list", {})
    check(r["structuredContent"]["result"][0]["title"] == "milk", r)

    r = await page.webmcp.call_tool("todos.add", {"title": 5})
    check(r["isError"] is True, r)
    check(r["structuredContent"]["code"] == "invalid", r)
    check(r["structuredContent"]["issues"][0]["path"] == "title", r)
    check("title" in r["content"][0]["text"], r)

    # Rejected in the app's dialog: the reason reaches the agent.
    call = asyncio.create_task(
        page.webmcp.call_tool("premium.upgrade", {"plan": "monthly", "card_number": CANARY[0]})
    )
    await page.wait_for_selector("#confirm[open]")
    shown = json.loads(await page.input_value("#confirm-input"))
    check(shown == {"plan": "monthly", "card_number": "[redacted]"}, shown)
    check("Upgrade to the monthly plan" in await page.inner_text("#confirm-summary"), "summary")
    await no_secret_in_dom(page, console)
    await page.fill("#confirm-reason", "too expensive")
    await page.click("#confirm-reject")
    r = await call
    check(r["isError"] is True and r["structuredContent"]["code"] == "rejected", r)
    check("too expensive" in r["content"][0]["text"], r)

    # An edit is re-validated (asked again with the issue), then the tool gets
    # the real number where the dialog left "[redacted]".
    call = asyncio.create_task(
        page.webmcp.call_tool("premium.upgrade", {"plan": "monthly", "card_number": CANARY[0]})
    )
    await page.wait_for_selector("#confirm[open]")
    await page.fill("#confirm-input", json.dumps({"plan": 7, "card_number": "[redacted]"}))
    await page.click("#confirm-approve")
    await wait_for(
        lambda: page.evaluate(
            "() => document.getElementById('confirm').open && document.getElementById('confirm-issues').textContent"
        ),
        "the dialog asked again with the issues",
    )
    issues = await page.inner_text("#confirm-issues")
    check(issues.startswith("plan:"), issues)
    await page.fill("#confirm-input", json.dumps({"plan": "yearly", "card_number": "[redacted]"}))
    await page.click("#confirm-approve")
    r = await call
    check(r["isError"] is False, r)
    check(r["structuredContent"]["result"] == "Upgraded to yearly: charged the card ending in 3187", r)

    # A destructive tool, approved as is.
    call = asyncio.create_task(page.webmcp.call_tool("todos.clear", {}))
    await page.wait_for_selector("#confirm[open]")
    check("Delete every to-do" in await page.inner_text("#confirm-summary"), "summary")
    await page.click("#confirm-approve")
    r = await call
    check(r["isError"] is False and r["structuredContent"]["result"] == 1, r)

    # The page's button shows and hides the archive scope.
    check("archive.archived" not in await names(page), "hidden at first")
    await page.click("#archive-show")
    await wait_for(lambda: _has(page, "archive.archived"), "archive.archived registered")
    r = await page.webmcp.call_tool("archive.archived", {})
    check(r["structuredContent"]["result"][0]["title"] == "milk", r)
    await page.click("#archive-hide")
    await wait_for(lambda: _lacks(page, "archive.archived"), "archive.archived unregistered")
    await no_secret_in_dom(page, console)
    await browser.close()
    return {"console": console}


async def _json(api, url, key):
    return (await (await api.get(url)).json())[key]


async def start_abortable(page, label, name, input):
    """Call `name` through Chromium's executeTool with an AbortSignal; abort with
    window.__abort[label](); window.__outcome[label] is the result or the error's name."""
    await page.evaluate(
        """async ([label, name, input]) => {
            window.__abort = window.__abort || {};
            window.__outcome = window.__outcome || {};
            const mc = document.modelContext;
            const tool = (await mc.getTools()).find(t => t.name === name);
            const c = new AbortController();
            const done = mc.executeTool(tool, input, {signal: c.signal}).then(
                r => { window.__outcome[label] = r; }, e => { window.__outcome[label] = e.name; });
            window.__abort[label] = async () => { c.abort(); await done; };
        }""",
        [label, name, input],
    )


async def _has(page, name):
    return name in await names(page)


async def _lacks(page, name):
    return name not in await names(page)


async def confirm(p, base):
    """The test app's page with a scripted onConfirm: runs once with the real
    values; re-sync after reconnects never registers a tool twice; abort."""
    browser = await launch(p)
    context = await browser.new_context()
    page = await context.new_page()
    console = open_page_console(page)
    await page.goto(base + "/")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    listed = await names(page)
    check("pay.send" in listed and "extra.hello" in listed, listed)
    long = [n for n in listed if n.startswith("loo")]
    check(len(long) == 1 and len(long[0]) == 128, long)
    r = await page.webmcp.call_tool(long[0], {})
    check(r["structuredContent"]["result"] == "long", r)

    call = asyncio.create_task(
        page.webmcp.call_tool("pay.send", {"title": "rent", "card": {"number": CANARY[0], "cvc": CANARY[1]}})
    )
    asked = await wait_for(lambda: page.evaluate("() => window.__asked[0]"), "onConfirm asked")
    check(asked["input"]["card"] == {"number": "[redacted]", "cvc": "[redacted]"}, asked)
    check(asked["tool"] == "pay.send" and asked["caller"] == "webmcp", asked)
    await page.evaluate("() => window.__answer(0, {approved: true})")
    r = await call
    check(r["isError"] is False, r)
    check(r["structuredContent"]["last4"] == "3187", r)
    check(r["structuredContent"]["echo"] == "[redacted]", r)

    # Re-sync: the dialog goes away and comes back; the network drops.
    once = await page.evaluate("() => window.__registered")
    check(all(v == 1 for v in once.values()), once)
    await page.evaluate("() => { window.__saved = window.toolmarkWebMcp.onConfirm; window.toolmarkWebMcp.onConfirm = null; }")
    await wait_for(lambda: _lacks(page, "pay.send"), "pay.send unregistered without a dialog")
    await page.evaluate("() => { window.toolmarkWebMcp.onConfirm = window.__saved; }")
    await wait_for(lambda: _has(page, "pay.send"), "pay.send registered again")
    # The connection breaks (the proxy cuts it and holds new ones) while a
    # scope is hidden: after the reconnect the page re-syncs.
    api = await p.request.new_context()
    control, direct = sys.argv[4], sys.argv[5]
    check((await api.post(control + "/proxy/cut")).ok, "cut")
    check((await api.post(direct + "/test/extra/hide")).ok, "hid extra")
    # Meanwhile another page opens a session: at the bound of one page, this
    # page's session (idle while cut off) makes room, so its shim must open a
    # new one when it reconnects.
    other = await api.post(
        direct + "/toolmark/page",
        headers={"Origin": direct, "X-Toolmark-WebMCP": "1", "Content-Type": "application/json"},
        data="{}",
    )
    check(other.status == 201, f"another page: {other.status}")
    await asyncio.sleep(0.3)
    check((await api.post(control + "/proxy/resume")).ok, "resumed")
    await wait_for(lambda: _lacks(page, "extra.hello"), "extra.hello unregistered after the reconnect", 20)
    await api.post(direct + "/test/extra/show")
    await wait_for(lambda: _has(page, "extra.hello"), "extra.hello back")
    counts = await page.evaluate("() => window.__registered")
    listed = await names(page)
    check(len(listed) == len(set(listed)), f"duplicates: {listed}")
    for name, n in counts.items():
        want = 2 if name in ("pay.send", "extra.hello") else 1
        check(n == want, f"{name} registered {n} times: {counts}")

    # An agent in the page gives up on a call (Chromium's own executeTool with
    # an AbortSignal): execute's signal aborts, the app cancels the run.
    await start_abortable(page, "slow", "slow.wait", {})
    await wait_for(lambda: _json(api, direct + "/test/slow", "started"), "slow.wait started")
    await page.evaluate("() => window.__abort.slow()")
    check(await page.evaluate("() => window.__outcome.slow") == "AbortError", "the call was aborted")
    await wait_for(lambda: _json(api, direct + "/test/slow", "cancelled"), "slow.wait cancelled")

    # ... while the dialog is open: the dialog is closed, nothing runs.
    await start_abortable(page, "late", "pay.send", {"title": "late", "card": {"number": CANARY[0], "cvc": CANARY[1]}})
    await wait_for(lambda: page.evaluate("() => window.__asked.length === 2"), "asked again")
    await page.evaluate("() => window.__abort.late()")
    asked = await page.evaluate("() => window.__asked.map(r => r.confirmId)")
    await wait_for(lambda: page.evaluate("() => window.__closed.length"), "the dialog closed")
    check(await page.evaluate("() => window.__closed") == [asked[1]], "closed the open one")
    await no_secret_in_dom(page, console)
    await api.dispose()
    await browser.close()
    return {"counts": counts}


async def interaction(p, base):
    """Where execute's client offers requestUserInteraction, onConfirm runs in it."""
    browser = await launch(p)
    page = await browser.new_page()
    await page.goto(base + "/interaction")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    call = asyncio.create_task(
        page.webmcp.call_tool("pay.send", {"title": "rent", "card": {"number": CANARY[0], "cvc": CANARY[1]}})
    )
    await wait_for(lambda: page.evaluate("() => window.__asked.length === 1"), "onConfirm asked")
    check(await page.evaluate("() => window.__interactions") == 1, "asked inside requestUserInteraction")
    await page.evaluate("() => window.__answer(0, {approved: false, reason: 'not in this tab'})")
    r = await call
    check(r["isError"] is True and "not in this tab" in r["content"][0]["text"], r)
    # A read tool asks nothing.
    r = await page.webmcp.call_tool("notes.read", {})
    check(r["isError"] is False, r)
    check(await page.evaluate("() => window.__interactions") == 1, "no interaction for a read")
    await browser.close()
    return {}


async def plain(p, base):
    """A page without onConfirm: no guarded tools, and the console says so."""
    browser = await launch(p)
    page = await browser.new_page()
    console = open_page_console(page)
    await page.goto(base + "/plain")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    listed = await names(page)
    check("pay.send" not in listed and "notes.read" in listed, listed)
    check(await page.evaluate("() => window.toolmarkWebMcp.hidden") == ["pay.send"], "hidden")
    check(any("no onConfirm" in c and "pay.send" in c for c in console), console)
    await browser.close()
    return {}


async def dup(p, base):
    """The browser refuses one of the shim's tools: the shim reports it."""
    browser = await launch(p)
    page = await browser.new_page()
    console = open_page_console(page)
    await page.goto(base + "/dup")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    refused = await page.evaluate("() => window.toolmarkWebMcp.refused")
    check(sorted(r["name"] for r in refused) == ["extra.hello", "notes.read", "slow.wait"], refused)
    reasons = {r["name"]: r["reason"] for r in refused}
    check("Duplicate" in reasons["notes.read"], reasons)
    check("Invalid tool name" in reasons["extra.hello"], reasons)
    check("getTools" in reasons["slow.wait"], reasons)
    check(any(c.startswith("error:") and "did not register" in c for c in console), console)
    listed = await names(page)
    check(listed.count("notes.read") == 1, listed)
    check("pay.send" in listed and "extra.hello" not in listed and "slow.wait" not in listed, listed)
    await browser.close()
    return {"refused": refused}


async def attacker(p, base, evil_base):
    """A page of another origin tries every endpoint."""
    browser = await launch(p)
    page = await browser.new_page()
    await page.goto(evil_base + "/evil")
    out = await page.evaluate("(target) => window.attack(target)", base)
    for label in ("page_with_header", "call_with_header"):
        check(out[label].startswith("blocked"), out)
    for label in ("page_simple", "call_simple", "answer_simple", "stream_simple"):
        check(out[label] in ("opaque",) or out[label].startswith("blocked"), out)
    await browser.close()
    return {"attack": out}


async def polyfill(p, base):
    """@mcp-b/webmcp-polyfill in a Chromium without WebMCP, from the main world."""
    browser = await launch(p, webmcp=False)
    page = await browser.new_page()
    console = open_page_console(page)
    await page.goto(base + "/polyfill")
    native = await page.evaluate("() => window.toolmarkWebMcp.status")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    check(await page.evaluate("() => window.toolmarkWebMcp.status") == "ready", native)
    listed = await page.evaluate("async () => (await document.modelContext.getTools()).map(t => t.name).sort()")
    check("notes.read" in listed and "pay.send" in listed, listed)
    run = """async ([name, input]) => {
        const mc = document.modelContext;
        const tool = (await mc.getTools()).find(t => t.name === name);
        const r = await mc.executeTool(tool, JSON.stringify(input));
        return typeof r === "string" ? JSON.parse(r) : r;
    }"""
    r = await page.evaluate(run, ["notes.read", {}])
    check(r["structuredContent"] == {"notes": ["alpha", "beta"]}, r)
    pending = page.evaluate(run, ["pay.send", {"title": "poly", "card": {"number": CANARY[0], "cvc": CANARY[1]}}])
    pending = asyncio.ensure_future(pending)
    asked = await wait_for(lambda: page.evaluate("() => window.__asked[0]"), "onConfirm asked")
    check(asked["input"]["card"]["cvc"] == "[redacted]", asked)
    await page.evaluate("() => window.__answer(0, {approved: true})")
    r = await pending
    check(r["isError"] is False and r["structuredContent"]["last4"] == "3187", r)
    await no_secret_in_dom(page, console)
    await browser.close()
    return {}


async def navigator(p, base):
    """Only navigator.modelContext (older drafts): the shim falls back to it."""
    browser = await launch(p, webmcp=False)
    page = await browser.new_page()
    await page.goto(base + "/navigator")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    check(await page.evaluate("() => window.toolmarkWebMcp.status") == "ready", "ready")
    check(await page.evaluate("() => document.modelContext === undefined"), "no document.modelContext")
    listed = await page.evaluate("async () => (await navigator.modelContext.getTools()).map(t => t.name)")
    check("notes.read" in listed, listed)
    r = await page.evaluate(
        """async () => {
            const mc = navigator.modelContext;
            const tool = (await mc.getTools()).find(t => t.name === "notes.read");
            const r = await mc.executeTool(tool, "{}");
            return typeof r === "string" ? JSON.parse(r) : r;
        }"""
    )
    check(r["structuredContent"] == {"notes": ["alpha", "beta"]}, r)
    await browser.close()
    return {}


async def unsupported(p, base):
    """No WebMCP and no polyfill: a clear console message, nothing else."""
    browser = await launch(p, webmcp=False)
    page = await browser.new_page()
    console = open_page_console(page)
    await page.goto(base + "/")
    await page.evaluate("() => window.toolmarkWebMcp.ready")
    check(await page.evaluate("() => window.toolmarkWebMcp.status") == "unsupported", "status")
    check(any("has no WebMCP" in c for c in console), console)
    await browser.close()
    return {}


async def main():
    scenario, base = sys.argv[1], sys.argv[2]
    async with async_playwright() as p:
        if scenario == "attacker":
            result = await attacker(p, base, sys.argv[4])
        else:
            result = await globals()[scenario](p, base)
    print("RESULT " + json.dumps(result))
    print(f"all checks passed: {scenario}")


CHROMIUM = sys.argv[3]
asyncio.run(main())
