"""Benchmark: the Prefect UI's custom-run form for contract-review, submitted in a real headless browser right
after `clausegate up`.

    python bench/ui_form.py [--n 50] [--port 4310] [--gateway-port 8310] [--database postgres|sqlite]
                            [--api-url URL] [--source PDF] [--keep] [--json FILE]

Needs Chromium and its driver (Debian: ``apt-get install -y chromium chromium-driver``) and ``selenium``
(``pip install -e '.[bench]'``); none of them is a ClauseGate dependency.

1. Starts the local stack exactly as `clausegate up` does (server with the UI, database, configuration,
   `prefect deploy`, warm start, worker, gateway with the demo Slack) in a fresh temporary stack folder, on the
   given ports (``--api-url`` uses a running stack instead).  ``--database`` is passed on where `clausegate up`
   has that option (the embedded-PostgreSQL change); older code runs on SQLite.
2. Opens the UI in headless Chromium and logs in the way a person does: the UI's login page asks for the API
   credential (the string `clausegate auth show` prints; Prefect's UI keeps it base64-encoded in the
   ``prefect-password`` localStorage entry and sends it as ``Authorization: Basic``).
3. N times, as fast as the browser goes, starting the moment `up` returned: opens the custom-run page of
   contract-review (Deployments > contract-review > Run > Custom run), types a CUAD contract's path into
   ``source``, presses Submit and waits for the outcome: the success toast (the UI then shows the deployment
   page), an error toast ("Something went wrong trying to create a flow run"), or the UI's "Oops. Something
   went wrong" page.
4. Counts: UI failures (error toast, error page, or no outcome in 30 s), the runs the server actually holds for
   that deployment (must be N), and the "database is locked" mentions in the stack's logs (server, worker, runs;
   the server runs with ``PREFECT_API_LOG_RETRYABLE_ERRORS=true``, so every 503 it answers for a lock is logged;
   one traceback mentions it about twice), as ``bench/batch.py`` counts them.

Target: 0 failures in 50 submissions.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CUAD_PDFS = REPO.parent / "shared" / "data" / "cuad" / "full_contract_pdf"
DEPLOYMENT = "contract-review/contract-review"
OUTCOME_SECONDS = 30.0


def pick_source() -> Path:
    pdfs = sorted(p for p in CUAD_PDFS.rglob("*") if p.suffix.lower() == ".pdf") if CUAD_PDFS.is_dir() else []
    if pdfs:
        return pdfs[0]
    fixtures = sorted((REPO / "samples").glob("*.pdf")) + sorted((REPO / "tests").rglob("*.pdf"))
    if not fixtures:
        sys.exit(f"no PDF found under {CUAD_PDFS} or the repo's samples/tests")
    return fixtures[0]


def browser():
    from selenium import webdriver  # local import: a bench-only dependency
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    binary = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
    if Path(binary).exists():
        opts.binary_location = binary
    driver_path = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
    service = Service(driver_path) if Path(driver_path).exists() else Service()
    return webdriver.Chrome(options=opts, service=service)


def wait_for(predicate, timeout: float, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # the page is changing under us: look again
            value = None
        if value:
            return value
        time.sleep(step)
    return None


def login(driver, ui_url: str, auth: str | None) -> None:
    """The UI's own login page when the API asks for a credential (else nothing to do)."""
    from selenium.webdriver.common.by import By  # local import: bench-only dependency
    from selenium.webdriver.common.keys import Keys

    driver.get(ui_url)
    field = wait_for(lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, "input[type=password]")
                              if e.is_displayed()] or ("/login" not in driver.current_url and
                                                       driver.find_elements(By.CSS_SELECTOR, "nav, .p-layout")
                                                       and "ok"), 60)
    if field in (None, "ok"):
        if auth and field is None:
            sys.exit("the UI showed neither its login page nor its dashboard within 60 s")
        return
    if not auth:
        sys.exit("the UI asks for a credential but no API credential was found (`clausegate auth show`)")
    field[0].send_keys(auth, Keys.ENTER)
    if not wait_for(lambda: driver.execute_script("return localStorage.getItem('prefect-password')")
                    and "/login" not in driver.current_url, 30):
        sys.exit(f"logging in to the UI failed (still at {driver.current_url})")


def source_input(driver):
    """The text input of the ``source`` parameter on the custom-run form."""
    from selenium.webdriver.common.by import By  # local import: bench-only dependency

    xpath = ("//*[self::label or self::legend or self::span or self::div or self::p]"
             "[translate(normalize-space(text()), 'SOURCE', 'source')='source']")
    for label in driver.find_elements(By.XPATH, xpath):
        if not label.is_displayed():
            continue
        for inp in label.find_elements(By.XPATH, "following::input[not(@type='hidden')][1]"
                                                 " | following::textarea[1]"):
            if inp.is_displayed():
                return inp
    return None


def submit_once(driver, run_page: str, source: str) -> tuple[str, str, float]:
    """One custom-run submission: (outcome, detail, seconds). outcome: ok | error-toast | error-page | timeout."""
    from selenium.webdriver.common.by import By  # local import: bench-only dependency

    t0 = time.monotonic()
    driver.get(run_page)

    def ready():
        if "Oops. Something went wrong" in driver.find_element(By.TAG_NAME, "body").text:
            return "error-page"
        inp = source_input(driver)
        buttons = [b for b in driver.find_elements(By.TAG_NAME, "button")
                   if b.is_displayed() and b.text.strip() == "Submit"]
        return (inp, buttons[0]) if inp is not None and buttons else None

    got = wait_for(ready, OUTCOME_SECONDS)
    if got is None:
        return "timeout", "the form did not appear", time.monotonic() - t0
    if got == "error-page":
        return "error-page", "Oops. Something went wrong (loading the form)", time.monotonic() - t0
    inp, button = got
    inp.clear()
    inp.send_keys(source)
    button.click()

    def outcome():
        for toast in driver.find_elements(By.CSS_SELECTOR, ".p-toast__card"):
            text = toast.text.strip()
            if toast.find_elements(By.CSS_SELECTOR, ".p-toast__icon--error") or "went wrong" in text.lower():
                return "error-toast", text.replace("\n", " ")
            if text:
                return "ok", text.replace("\n", " ")
        if "Oops. Something went wrong" in driver.find_element(By.TAG_NAME, "body").text:
            return "error-page", "Oops. Something went wrong"
        return None

    got = wait_for(outcome, OUTCOME_SECONDS)
    seconds = time.monotonic() - t0
    if got is None:
        return "timeout", f"no toast within {OUTCOME_SECONDS:.0f} s", seconds
    return got[0], got[1], seconds


def count_runs(api_url: str, auth: str | None, deployment_id: str) -> int:
    import httpx  # local import: keeps --help fast

    headers = {}
    if auth:
        import base64  # local import: as above

        headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    res = httpx.post(f"{api_url}/flow_runs/count", headers=headers, timeout=30,
                     json={"deployments": {"id": {"any_": [deployment_id]}}})
    res.raise_for_status()
    return int(res.json())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--port", type=int, default=4310)
    ap.add_argument("--gateway-port", type=int, default=8310)
    ap.add_argument("--fake-slack-port", type=int, default=8311)
    ap.add_argument("--database", default=None, help="postgres or sqlite (where `clausegate up` has the option)")
    ap.add_argument("--api-url", default=None, help="use this running stack's server instead of starting one")
    ap.add_argument("--source", type=Path, default=None, help="the PDF path typed into the form")
    ap.add_argument("--keep", action="store_true", help="keep the temporary stack folder")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    source = (args.source or pick_source()).resolve()

    from clausegate.security import credentials
    from clausegate.stack.lifecycle import down, up
    from clausegate.stack.state import StackOptions, StackPaths

    base = Path(tempfile.mkdtemp(prefix="cg-bench-ui-"))
    paths = StackPaths.for_project(REPO, home=base / "stack")
    result: dict = {"n": args.n, "cores": os.cpu_count(), "load_at_start": os.getloadavg()[0]}
    started_stack = args.api_url is None
    if started_stack:
        extra = {}
        fields = {f.name for f in dataclasses.fields(StackOptions)}
        if "database" in fields:
            extra["database"] = args.database or "postgres"
        elif args.database not in (None, "sqlite"):
            sys.exit("this code's `clausegate up` has no --database option (it runs on SQLite)")
        # the server logs each 503 it answers for a lock (as bench/batch.py counts them)
        options = StackOptions(port=args.port, gateway_port=args.gateway_port, fake_slack_port=args.fake_slack_port,
                               extra_env={"PREFECT_API_LOG_RETRYABLE_ERRORS": "true"}, **extra)
        t_up = time.perf_counter()
        state = up(options, paths, echo=lambda m: print(f"  up: {m}"))
        result["up_seconds"] = round(time.perf_counter() - t_up, 1)
        result["database"] = (state.get("database") or {"kind": "sqlite"})["kind"]
        api_url, ui_url = state["api_url"], state["ui_url"]
        print(f"`clausegate up` took {result['up_seconds']} s (database: {result['database']})")
    else:
        api_url = args.api_url.rstrip("/")
        ui_url = api_url[: -len("/api")] if api_url.endswith("/api") else api_url
    auth = credentials.api_auth_string()
    driver = None
    outcomes: list[tuple[str, str, float]] = []
    try:
        import httpx

        headers = {"Authorization": "Basic " + __import__("base64").b64encode(auth.encode()).decode()} if auth else {}
        flow, name = DEPLOYMENT.split("/")
        dep = httpx.get(f"{api_url}/deployments/name/{flow}/{name}", headers=headers, timeout=30).json()
        runs_before = count_runs(api_url, auth, dep["id"])
        t_browser = time.perf_counter()
        driver = browser()
        login(driver, ui_url, auth)
        result["browser_ready_seconds"] = round(time.perf_counter() - t_browser, 1)
        run_page = f"{ui_url}/deployments/deployment/{dep['id']}/run"
        print(f"browser logged in ({result['browser_ready_seconds']} s); submitting the custom-run form "
              f"{args.n} times with source={source}")
        t0 = time.perf_counter()
        for i in range(args.n):
            outcome = submit_once(driver, run_page, str(source))
            outcomes.append(outcome)
            if outcome[0] != "ok" or i < 2:
                print(f"  #{i + 1}: {outcome[0]} ({outcome[2]:.1f} s) {outcome[1][:160]}")
            if outcome[0] != "ok":
                shot = base / f"failure-{i + 1}.png"
                driver.save_screenshot(str(shot))
        result["submit_seconds"] = round(time.perf_counter() - t0, 1)
        time.sleep(2)
        result["runs_created"] = count_runs(api_url, auth, dep["id"]) - runs_before
    finally:
        if driver is not None:
            driver.quit()
        if started_stack:
            down(paths, echo=lambda m: None)
    logs = list(paths.logs.glob("*.log")) if started_stack else []
    locked = sum(p.read_text(errors="replace").count("database is locked") for p in logs)
    failures = [o for o in outcomes if o[0] != "ok"]
    by_kind: dict[str, int] = {}
    for kind, _, _ in failures:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    secs = sorted(o[2] for o in outcomes)
    result.update(failures=len(failures), failures_by_kind=by_kind, locked_lines=locked if started_stack else None,
                  median_submit_seconds=round(secs[len(secs) // 2], 2) if secs else None,
                  load_at_end=os.getloadavg()[0])
    print(f"\nUI custom-run form, {args.n} submissions right after `clausegate up` "
          f"({result.get('database', 'running stack')}), {result['cores']} cores, load avg "
          f"{result['load_at_start']:.1f} -> {result['load_at_end']:.1f}:")
    print(f"  UI failures: {len(failures)} of {len(outcomes)} {by_kind or ''}")
    print(f"  `clausegate up` took {result.get('up_seconds', '-')} s; the first submission began "
          f"{result.get('browser_ready_seconds', '-')} s after it returned (browser start + login)")
    print(f"  runs the server created: {result['runs_created']} (expected {args.n})")
    print(f"  median seconds per submission (page load + submit + toast): {result['median_submit_seconds']}")
    print(f"  'database is locked' mentions in the stack's logs: "
          f"{locked if started_stack else 'not counted (--api-url: not our logs)'}")
    met = len(failures) == 0 and result["runs_created"] == args.n and len(outcomes) >= 50
    print(f"TARGET: 0 failures in 50 submissions -> {'met' if met else 'NOT met'}"
          + ("" if len(outcomes) >= 50 else f" (only {len(outcomes)} submitted)"))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.keep or failures:
        print(f"kept {base} (stack folder, logs{', screenshots of failures' if failures else ''})")
    else:
        import shutil  # local import: cleanup only

        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
