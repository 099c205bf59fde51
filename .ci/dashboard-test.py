#!/usr/bin/env python3
"""The dashboard (/__doppel/ui/) in a real headless Chromium, driven by Selenium.

Serves contracts/tales.yaml with an admin token on a loopback port, then:
the page asks for the token and loads without console errors; a request
made after it opened shows within a second, with why it got its answer;
each control changes what the next request gets (force a 402, advance the
clock a month, reset the session); the keyboard reaches the journal; light
and dark mode are readable; an MCP server's tool calls and an LLM API's
completions (the bundled agent contracts) are rows with why. With --screenshot PATH it saves the page with
its traffic (docs/dashboard.png). Bounded in time (--timeout).

    python3 .ci/dashboard-test.py --doppel .build/debug/doppel
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

TOKEN = "dashboard-test-token"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIzZjJiOGMxZS03ZDRhLTRlNTktOWIxYy0yYTZmMGU4ZDRjNzEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCJ9"
       ".c2lnbmF0dXJl")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def call(base, method, path, body=None, session=None, token=None, headers=()):
    headers = {**({"Content-Type": "application/json"} if body is not None else {}), **dict(headers)}
    if session:
        headers["Doppel-Session"] = session
    if token:
        headers["Doppel-Admin-Token"] = token
    if path.startswith("/api/"):
        headers["Authorization"] = "Bearer " + JWT
    request = urllib.request.Request(base + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


children = {}


def healthy_at(base):
    try:
        return call(base, "GET", "/__doppel/health")[0] == 200
    except OSError:
        return False


def make_child(base, session):
    status, body = call(base, "POST", "/api/v1/children", {"name": "Emma", "age_category": "5-7", "gender": "female", "interests": ["fairies"]},
                        session=session)
    assert status == 200, (status, body)
    children[session] = json.loads(body)["id"]


def generate(base, session):
    return call(base, "POST", "/api/v1/stories/generate", {"language": "en", "child_id": children[session]}, session=session)[0]


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} (waited {seconds} s)")


def luminance(css):
    parts = [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    channels = [c / 255 for c in parts]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a, b):
    la, lb = sorted([luminance(a), luminance(b)], reverse=True)
    return (la + 0.05) / (lb + 0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--doppel", required=True)
    parser.add_argument("--port", type=int, default=18981)
    parser.add_argument("--screenshot")
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args()
    signal.alarm(args.timeout)  # the whole run is bounded

    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen([args.doppel, "serve", "contracts/tales.yaml", "--port", str(args.port), "--admin-token", TOKEN,
                               "--scenarios", "scenarios/tales", "--log-format", "none"], cwd=ROOT)
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,1000"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = None
    passed = 0
    try:
        def healthy():
            try:
                return call(base, "GET", "/__doppel/health", token=TOKEN)[0] == 200
            except OSError:
                return False

        wait_for(healthy, 20, "the server did not start")
        # Debian's chromium and chromium-driver; Selenium's own manager would try to download them.
        options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")))
        driver.set_page_load_timeout(20)

        def ok(name):
            nonlocal passed
            passed += 1
            print(f"ok - {name}", flush=True)

        def console_errors():
            return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]

        # The page asks for the token, then goes live, without console errors.
        driver.get(base + "/__doppel/ui/")
        wait_for(lambda: driver.find_element(By.ID, "token-form").is_displayed(), 5, "the page did not ask for the admin token")
        driver.find_element(By.ID, "token-input").send_keys(TOKEN + Keys.ENTER)
        wait_for(lambda: driver.find_element(By.ID, "live").text == "live", 5, "the event stream did not go live")
        wait_for(lambda: "Tale Generator API" in driver.find_element(By.ID, "contract-title").text, 5, "the contract's title is not shown")
        errors = console_errors()
        assert not errors, f"console errors on load: {errors}"
        ok("the page asks for the token, goes live and loads without console errors")

        # A request made now shows within a second, with why.
        for n in range(3):
            session = f"probe-{n}"
            started = time.monotonic()
            assert call(base, "GET", "/api/v1/free-stories", session=session)[0] == 200
            xpath = f"//tbody[@id='journal-rows']/tr[td[3][text()='{session}']]"
            row = wait_for(lambda: driver.find_elements(By.XPATH, xpath), 1.0, f"the request of {session} did not show within a second")[0]
            elapsed = time.monotonic() - started
            assert "first response" in row.find_element(By.CLASS_NAME, "why").get_attribute("title"), row.text
            print(f"   request {n} shown {elapsed * 1000:.0f} ms after it was sent", flush=True)
        ok("requests made after the page opened show within a second, with why")

        controls = driver.find_element(By.ID, "control-session")
        controls.clear()
        controls.send_keys("ui-test")

        # Force a 402: the next generate gets it, the one after is the contract's again.
        make_child(base, "ui-test")
        Select(driver.find_element(By.ID, "force-endpoint")).select_by_value("generate-story")
        Select(driver.find_element(By.ID, "force-status")).select_by_value("402")
        driver.find_element(By.ID, "force-button").click()
        wait_for(lambda: "gets 402" in driver.find_element(By.ID, "message").text, 5, "forcing a 402 was not confirmed")
        status, body = call(base, "POST", "/api/v1/stories/generate", {"language": "en", "child_id": children["ui-test"]}, session="ui-test")
        assert status == 402, f"the forced 402 was not the next answer: {status} ({driver.find_element(By.ID, 'message').text})"
        # Rendered as the contract's own 402 would be: its limit_info from the session's state.
        assert json.loads(body)["limit_info"]["monthly_limit"] == 5, body
        assert generate(base, "ui-test") == 200, "the forced answer was used more than once"
        forced = wait_for(lambda: driver.find_elements(By.XPATH, "//tbody[@id='journal-rows']/tr[td[3][text()='ui-test'] and td[5][text()='402']]"),
                          2, "the forced 402 is not in the journal")[0]
        assert "forced" in forced.find_element(By.CLASS_NAME, "why").get_attribute("title")
        ok("Force: the next request gets a 402, and the journal says it was forced")

        # Use up the month (5 stories), then advance the clock a month: served again.
        statuses = [generate(base, "ui-test") for _ in range(5)]
        assert statuses == [200, 200, 200, 200, 402], statuses
        driver.find_element(By.ID, "clock-advance").clear()
        driver.find_element(By.ID, "clock-advance").send_keys("1mo")
        driver.find_element(By.ID, "clock-advance-button").click()
        wait_for(lambda: "clock now reads" in driver.find_element(By.ID, "message").text, 5, "advancing the clock was not confirmed")
        assert generate(base, "ui-test") == 200, "a month later the quota did not start over"
        ok("Advance the clock a month: the used-up quota starts over")

        # Use it up again, then reset the session: served again.
        statuses = [generate(base, "ui-test") for _ in range(5)]
        assert statuses == [200, 200, 200, 200, 402], statuses
        driver.find_element(By.ID, "reset-session").click()
        wait_for(lambda: "reset" in driver.find_element(By.ID, "message").text, 5, "the reset was not confirmed")
        make_child(base, "ui-test")  # the reset forgot the child too
        assert generate(base, "ui-test") == 200, "after a reset the quota was still used up"
        ok("Reset: the session starts over and the next request is served")

        # The sessions view shows the state tree with what the last request changed.
        driver.find_element(By.ID, "tab-sessions").click()
        wait_for(lambda: "Session ui-test" in driver.find_element(By.ID, "session-detail").text, 5, "the session is not shown")
        def marked():
            # The view is drawn anew as events arrive: an element found a moment ago may be gone.
            try:
                return [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#session-detail .tree .changed")]
            except StaleElementReferenceException:
                return []
        wait_for(lambda: "stories_used" in marked(), 5, f"the changed state is not marked ({marked()})")
        ok("Sessions: the state as a tree, the last request's changes marked")

        # Another client resets the session: the marks of the state it left go.
        assert call(base, "POST", "/__doppel/reset?session=ui-test", token=TOKEN)[0] == 200
        wait_for(lambda: not marked(), 5,
                 "after another client's reset the old changes are still marked")
        make_child(base, "ui-test")
        ok("Sessions: a reset by another client clears the marked changes")

        # Coverage: reached and unreached statuses.
        driver.find_element(By.ID, "tab-coverage").click()
        wait_for(lambda: "pairs reached" in driver.find_element(By.ID, "coverage-summary").text, 5, "coverage is not shown")
        assert driver.find_elements(By.CSS_SELECTOR, "#coverage-rows .badge.reached")
        assert driver.find_elements(By.CSS_SELECTOR, "#coverage-rows .badge.unreached")
        ok("Coverage: each endpoint's documented statuses, reached or not")

        # At 1,400 px the journal fits: every column, Why and Response included, on screen without scrolling.
        driver.set_window_size(1400, 1000)
        driver.find_element(By.ID, "tab-journal").click()
        for i in range(3):
            call(base, "GET", "/api/v1/free-stories?language=en&limit=" + str(i + 1) + "&q=" + "x" * 200, session="ui-test-long-session-name-" + "y" * 60)
        wait_for(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#journal-rows tr")) > 3, 5, "the journal did not fill")
        time.sleep(0.3)
        right, width, why = driver.execute_script(
            "const t = document.getElementById('journal'); const why = t.querySelector('th:last-child').getBoundingClientRect();"
            "return [t.getBoundingClientRect().right, document.documentElement.clientWidth, why.right];")
        assert right <= width + 1 and why <= width + 1, f"the journal is {right:.0f} px wide in a {width} px window (Why ends at {why:.0f})"
        driver.set_window_size(1440, 1000)
        ok("Journal: at 1,400 px every column fits, Why and Response included")

        # The keyboard: "/" goes to the journal's filter; a row opens with Enter.
        driver.find_element(By.TAG_NAME, "body").send_keys("/")
        assert driver.switch_to.active_element.get_attribute("id") == "filter-session"
        driver.find_element(By.ID, "filter-session").send_keys("ui-test")
        first = driver.find_element(By.CSS_SELECTOR, "#journal-rows tr")
        first.send_keys(Keys.ENTER)
        wait_for(lambda: driver.find_element(By.ID, "detail").is_displayed(), 2, "Enter did not open the request")
        detail = driver.find_element(By.ID, "detail").text
        assert "Why" in detail and "Request" in detail and "authorization: bearer" in detail.lower(), detail
        ok("Keyboard: / reaches the filters, Enter opens a request with its request and response")

        # Light and dark: readable text in both.
        for scheme in ["light", "dark"]:
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            colors = driver.execute_script(
                "const s = getComputedStyle(document.body); return [s.color, s.backgroundColor];")
            ratio = contrast(*colors)
            assert ratio >= 7, f"{scheme}: text {colors[0]} on {colors[1]} has contrast {ratio:.1f}"
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        ok("Light and dark mode: body text contrast at least 7:1")

        # A WebSocket's traffic is a row too: the message taken, the rule, what it sent back.
        realtime = subprocess.Popen([args.doppel, "serve", "contracts/realtime-demo.yaml", "--port", str(args.port + 1), "--log-format", "none"], cwd=ROOT)
        try:
            base2 = f"http://127.0.0.1:{args.port + 1}"
            wait_for(lambda: healthy_at(base2), 20, "the realtime demo did not start")
            driver.get(base2 + "/__doppel/ui/")
            wait_for(lambda: driver.find_element(By.ID, "live").text == "live", 5, "the realtime demo's event stream did not go live")
            sock = socket.create_connection(("127.0.0.1", args.port + 1), timeout=5)
            sock.sendall(b"GET /v1/live HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ui\r\nDoppel-Session: ws-ui\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(4096)
            assert head.startswith(b"HTTP/1.1 101"), head
            payload, mask = b'{"type":"ping"}', b"\x01\x02\x03\x04"
            sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
            row = wait_for(lambda: driver.find_elements(By.XPATH, "//tbody[@id='journal-rows']/tr[td[3][text()='ws-ui'] and contains(., 'RECEIVE')]"),
                           2, "the socket's message did not show")[0]
            row.click()
            wait_for(lambda: driver.find_element(By.ID, "detail").is_displayed(), 2, "the socket's row did not open")
            detail = driver.find_element(By.ID, "detail").text
            assert "live.ping" in detail and "Message taken" in detail and '"pong"' in detail, detail
            sock.close()
            ok("WebSockets: a message taken shows as a row with its rule, the message and the answer sent")

            errors = console_errors()
            assert not errors, f"console errors: {errors}"

            # A page on another origin, in the same browser, against a server without a token:
            # the calls it can make without asking (no-cors, text bodies) are refused, nothing changes.
            evil_dir = tempfile.mkdtemp(prefix="doppel-evil-")
            with open(os.path.join(evil_dir, "evil.html"), "w") as page:
                page.write("<!doctype html><script>const b = '%s';"
                           "for (const [p, body] of [['/__doppel/clock?session=victim', '{\"advance\": \"400d\"}'],"
                           " ['/__doppel/next?session=victim', '{\"endpoint\": \"get-subscription\", \"status\": 401}'], ['/__doppel/reset', '']])"
                           " fetch(b + p, {method: 'POST', mode: 'no-cors', body}).catch(() => {});"
                           "setTimeout(() => document.title = 'sent', 500);</script>" % base2)
            evil = subprocess.Popen([sys.executable, "-m", "http.server", str(args.port + 2), "--bind", "127.0.0.1"], cwd=evil_dir,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                assert call(base2, "POST", "/__doppel/clock?session=kept", {"advance": "1d"})[0] == 200
                def page_served():
                    try:
                        return urllib.request.urlopen(f"http://127.0.0.1:{args.port + 2}/evil.html", timeout=2).status == 200
                    except OSError:
                        return False
                wait_for(page_served, 10, "the other origin's server did not start")
                driver.get(f"http://localhost:{args.port + 2}/evil.html")
                wait_for(lambda: driver.title == "sent", 5, "the other origin's page did not run")
                clock = json.loads(call(base2, "GET", "/__doppel/clock?session=victim")[1])
                assert not clock.get("offset_seconds"), f"a page of another origin moved the clock: {clock}"
                waiting = json.loads(call(base2, "GET", "/__doppel/next?session=victim")[1])["waiting"]
                assert waiting == [], f"a page of another origin forced an answer: {waiting}"
                kept = json.loads(call(base2, "GET", "/__doppel/clock?session=kept")[1])
                assert kept.get("offset_seconds"), f"a page of another origin reset every session: {kept}"
                driver.get_log("browser")  # that page's own console: the 403s of its refused calls
                driver.get("about:blank")
            finally:
                evil.terminate()
                evil.wait(timeout=10)
                shutil.rmtree(evil_dir, ignore_errors=True)
            ok("Admin API: a page of another origin cannot move a clock, force an answer or reset the sessions")
        finally:
            realtime.terminate()
            realtime.wait(timeout=10)

        # An agent's calls are rows too: an MCP server's tool calls (contracts/mcp-todo.yaml) and an LLM API's
        # completions (contracts/llm-chat.yaml), each with its endpoint and why it got its answer.
        def journal_row(session, endpoint, status):
            xpath = f"//tbody[@id='journal-rows']/tr[td[3][text()='{session}'] and td[5][text()='{status}'] and td[6][text()='{endpoint}']]"
            return driver.find_elements(By.XPATH, xpath)

        for contract, offset, calls, rows in [
            ("contracts/mcp-todo.yaml", 3,
             [("/mcp", {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "add_task", "arguments": {"title": f"t{n}"}}}, ())
              for n in range(6)] + [("/mcp", {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "add_task", "arguments": {"title": 5}}}, ())],
             [("mcp.add_task", 200, "len(state.tasks) >= data.task_limit"), ("mcp.add_task", 400, "expected string, got integer")]),
            ("contracts/llm-chat.yaml", 4,
             [("/v1/chat/completions", {"model": "doppel-chat-1", "messages": [{"role": "user", "content": "Hello"}]}, ()),
              ("/v1/chat/completions", {"model": "doppel-chat-1", "messages": [{"role": "user", "content": "Hello"}]},
               (("Authorization", "Bearer sk-test"),))],
             [("chat-completions", 401, "no credential was sent"), ("chat-completions", 200, "")])]:
            agent_port = args.port + offset
            agent_server = subprocess.Popen([args.doppel, "serve", contract, "--port", str(agent_port), "--log-format", "none"], cwd=ROOT)
            try:
                agent_base = f"http://127.0.0.1:{agent_port}"
                wait_for(lambda: healthy_at(agent_base), 20, f"{contract} did not start")
                driver.get(agent_base + "/__doppel/ui/")
                wait_for(lambda: driver.find_element(By.ID, "live").text == "live", 5, f"{contract}: the event stream did not go live")
                answers = [call(agent_base, "POST", path, body, session="ui-agent", headers=(("Accept", "application/json, text/event-stream"),) + headers)[0]
                           for path, body, headers in calls]
                for endpoint, status, why in rows:
                    def titles():
                        try:
                            return [row.find_element(By.CLASS_NAME, "why").get_attribute("title") for row in journal_row("ui-agent", endpoint, status)]
                        except StaleElementReferenceException:
                            return []
                    found = wait_for(lambda: [title for title in titles() if why in title], 2,
                                     f"{contract}: no {endpoint} row with {status} saying {why!r} (answers {answers}; rows say {titles()})")
                    print(f"   {endpoint} {status}: {found[0]}", flush=True)
            finally:
                agent_server.terminate()
                agent_server.wait(timeout=10)
        ok("Agents: an MCP tool's calls (the quota's error result, refused arguments) and an LLM API's completions show as rows with why")

        errors = console_errors()
        assert not errors, f"console errors: {errors}"
        ok("no console errors after all of the above")

        if args.screenshot:
            driver.get(base + "/__doppel/ui/")
            wait_for(lambda: driver.find_element(By.ID, "token-form").is_displayed() or driver.find_element(By.ID, "live").text == "live", 5,
                     "the page neither asked for the token nor went live")
            if driver.find_element(By.ID, "token-form").is_displayed():
                driver.find_element(By.ID, "token-input").send_keys(TOKEN + Keys.ENTER)
            wait_for(lambda: driver.find_element(By.ID, "live").text == "live", 5, "the event stream did not go live")
            driver.find_element(By.ID, "filter-session").clear()
            driver.find_element(By.ID, "filter-session").send_keys("ui-test")
            rows = driver.find_elements(By.XPATH, "//tbody[@id='journal-rows']/tr[td[5][text()='402']]")
            (rows[0] if rows else driver.find_element(By.CSS_SELECTOR, "#journal-rows tr")).click()
            driver.set_window_size(1440, 1500)
            time.sleep(0.3)
            driver.save_screenshot(args.screenshot)
            print(f"   screenshot saved to {args.screenshot}")
    finally:
        if driver:
            driver.quit()
        server.terminate()
        server.wait(timeout=10)
    print(f"{passed} dashboard checks passed")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        print(f"not ok - {error}", file=sys.stderr)
        sys.exit(1)
