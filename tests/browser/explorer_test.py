"""The explorer page of `attend serve` in a real browser (CTest: browser.explorer).

Makes three small models from `attend data toy` (additive, dot and no
attention), starts `attend serve --port 0` on 127.0.0.1, and drives headless
Chromium through Selenium, at a phone's width (360 px) and a desktop's (1280 px):
types a sentence, clicks a cell of the heatmap, moves with the arrow keys and
Enter, steps the decoder, opens the worked numbers, and checks that what the page
shows equals what POST /explain returns when the test asks it directly. It also
checks that the page shows an error the API returns, that the page never scrolls
sideways, and that the browser console holds no error. It saves a screenshot.

Exit 0: passed; 1: failed; 77 (CTest's SKIP_RETURN_CODE): selenium, chromium or
chromedriver is missing, with the reason printed. Everything it writes lives in
one temporary directory, removed at the end; the server is stopped with SIGTERM.

    explorer_test.py ATTEND WORK_PARENT SCREENSHOT
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

SKIP = 77
WIDTHS = (360, 1280)  # a phone, a desktop


def skip(reason):
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def near(shown, wanted):
    """The page writes 6 significant digits with a real minus sign (helpers.js: num)."""
    try:
        value = float(shown.strip().replace("\u2212", "-"))
    except ValueError:
        return False
    return abs(value - wanted) <= 1e-5 * abs(wanted) + 1e-12


def close(shown, wanted, what):
    check(near(shown, wanted), f"{what}: the page shows {shown!r}, the API gave {wanted}")


# ---------------------------------------------------------------------------
# The models and the server
# ---------------------------------------------------------------------------

def run(attend, *args, cwd):
    result = subprocess.run([attend, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=300)
    check(result.returncode == 0, f"attend {' '.join(args)} failed: {result.stderr}")


def make_models(attend, work):
    """Toy English->French; small enough to train in seconds, trained enough for a readable heatmap."""
    run(attend, "data", "toy", "--n", "2000", "--max-len", "8", "--out", "toy.tsv", cwd=work)
    sizes = ["--embed", "32", "--hidden", "32", "--batch", "32", "--bleu-sentences", "4", "--epochs", "40"]
    for kind, steps in (("additive", "2000"), ("dot", "2000"), ("none", "50")):
        run(attend, "train", "--data", "toy.tsv", *sizes, "--max-steps", steps, "--attention", kind,
            "--out", f"model_{kind}", cwd=work)
    with open(os.path.join(work, "toy.tsv"), encoding="utf-8") as f:
        return f.readline().rstrip("\n").split("\t")  # a source and its reference


class Server:
    """`attend serve` on 127.0.0.1, port chosen by the system, read from its one ready line."""

    def __init__(self, attend, work):
        models = [a for kind in ("additive", "dot", "none") for a in ("--model", f"model_{kind}")]
        self.stderr = open(os.path.join(work, "serve.err"), "w+", encoding="utf-8")
        self.proc = subprocess.Popen([attend, "serve", *models, "--host", "127.0.0.1", "--port", "0"], cwd=work,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.lines = queue.Queue()
        # Keeps reading stdout, so that the server never blocks on a full pipe.
        threading.Thread(target=self._read, daemon=True).start()
        self.url = None
        while self.url is None:
            try:
                line = self.lines.get(timeout=60)
            except queue.Empty:
                raise AssertionError("attend serve printed no 'listening on' line in 60 s") from None
            check(line is not None, f"attend serve ended before it listened: {self._errors()}")
            if line.startswith("listening on http://"):
                self.url = line.split(" ", 2)[2].strip()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _errors(self):
        self.stderr.seek(0)
        return self.stderr.read()

    def post(self, path, body):
        """POST JSON; returns (status, parsed answer)."""
        request = urllib.request.Request(self.url + path.lstrip("/"), data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def explain(self, body):
        status, answer = self.post("/explain", body)
        check(status == 200, f"POST /explain {body}: HTTP {status} {answer}")
        return answer

    def stop(self):
        """SIGTERM stops it cleanly: exit 0 (docs/serve.md)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("attend serve did not stop within 30 s of SIGTERM") from None
        self.stderr.close()
        check(self.proc.returncode == 0, f"attend serve exited {self.proc.returncode} after SIGTERM")


# ---------------------------------------------------------------------------
# The browser
# ---------------------------------------------------------------------------

def browser_or_skip():
    """The selenium module and the two programs, or a SKIP naming the missing one."""
    try:
        from selenium import webdriver  # noqa: F401  (Debian: python3-selenium)
    except ImportError:
        skip(f"{sys.executable} has no selenium (apt-get install python3-selenium)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        skip("no chromium on PATH (apt-get install chromium)")
    driver = shutil.which("chromedriver")
    if driver is None:
        skip("no chromedriver on PATH (apt-get install chromium-driver)")
    return chromium, driver


def start_browser(chromium, driver, work, width):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--lang=en-US",
                "--no-first-run", f"--user-data-dir={os.path.join(work, f'profile-{width}')}",
                f"--window-size={width},1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver, log_path=os.devnull), options=options)


def wait(browser, condition, what, seconds=60):
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        return WebDriverWait(browser, seconds).until(lambda b: condition(b))
    except Exception as e:  # TimeoutException, and anything else the wait raised
        raise AssertionError(f"waited {seconds} s for {what}: {type(e).__name__} {e}") from None


def console_errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def shown(panel, key):
    from selenium.webdriver.common.by import By
    return panel.find_element(By.CSS_SELECTOR, f".cell-panel dd[data-key='{key}'] .num").text


def showing(panel, t, j):
    """Whether the cell panel is about cell (t, j) (the page counts from 1, as the docs)."""
    from selenium.webdriver.common.by import By
    where = panel.find_element(By.CSS_SELECTOR, ".cell-panel dd[data-key='cell'] .from").text
    return f"step i = {t + 1} " in where and where.endswith(f"position j = {j + 1}")


def check_cell(server, panel, source, ref, model, t, j):
    """The cell panel of (t, j) shows the API's α, ∂L/∂α and ‖α_tj h_j‖ of step t."""
    body = {"src": source, "model": model, "step": t}
    if ref:
        body["ref"] = ref
    answer = server.explain(body)
    check(showing(panel, t, j), f"the cell panel is not about cell ({t}, {j})")
    close(shown(panel, "alpha"), answer["alpha"][t][j], f"α[{t}][{j}]")
    close(shown(panel, "dalpha"), answer["dalpha"][t][j], f"∂L/∂α[{t}][{j}]")
    close(shown(panel, "contribution"), answer["step"]["contribution_norms"][j], f"‖α h‖ of step {t}, j = {j}")
    return answer


def explore(server, browser, source, ref, width, screenshot):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    browser.get(server.url)
    boxes = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#model-list input"), "the list of models")
    check(len(boxes) == 3, f"expected 3 model check boxes, saw {len(boxes)}")
    check([b.is_selected() for b in boxes] == [True, True, False], "models 0 and 1 should be ticked at first")
    if ref:  # the desktop pass also shows the model without attention
        boxes[2].click()
        browser.find_element(By.ID, "ref").send_keys(ref)
    browser.find_element(By.ID, "src").send_keys(source)
    browser.find_element(By.ID, "go").click()
    panels = wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, "section.model td[data-t]")) > 0 and
                  b.find_elements(By.CSS_SELECTOR, "section.model"), "the heatmaps")
    check(len(panels) == (3 if ref else 2), f"expected one panel per ticked model, saw {len(panels)}")
    answers = [server.explain({"src": source, "model": m, **({"ref": ref} if ref else {})}) for m in range(len(panels))]
    for m, (panel, answer) in enumerate(zip(panels, answers)):
        translation = panel.find_element(By.CSS_SELECTOR, ".translation").text
        check(translation == (answer["translation"] or "(empty translation)"),
              f"model {m}: the page shows the translation {translation!r}, the API gave {answer['translation']!r}")
        check(answer["attention"] in panel.find_element(By.TAG_NAME, "h2").text or answer["attention"] == "none",
              f"model {m}'s heading does not name its attention {answer['attention']}")
    if ref:
        check(answers[2]["alpha"] is None, "the model without attention returned α")
        check("no attention" in panels[2].text, "the panel of the model without attention does not say so")
        check(not any(b.is_displayed() for b in panels[2].find_elements(By.CSS_SELECTOR, ".toolbar button")),
              "the panel of the model without attention shows buttons for a heatmap it does not have")

    # Click a cell of model 0 (additive): its α, ∂L/∂α and contribution.
    panel, answer = panels[0], answers[0]
    t, j = min(1, len(answer["target_tokens"]) - 1), min(1, len(answer["source_tokens"]) - 1)
    panel.find_element(By.CSS_SELECTOR, f"td[data-t='{t}'][data-j='{j}']").click()
    wait(browser, lambda b: panel.find_elements(By.CSS_SELECTOR, f"td.selected[data-t='{t}'][data-j='{j}']"),
         f"cell ({t}, {j}) to be selected")
    check_cell(server, panel, source, ref, 0, t, j)

    # Hovering another cell shows its numbers; leaving the heatmap shows the selected cell's again.
    from selenium.webdriver.common.action_chains import ActionChains
    t_hover = len(answer["target_tokens"]) - 1
    hovered = panel.find_element(By.CSS_SELECTOR, f"td[data-t='{t_hover}'][data-j='0']")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", hovered)
    ActionChains(browser).move_to_element(hovered).perform()
    wait(browser, lambda b: showing(panel, t_hover, 0), f"the hovered cell ({t_hover}, 0) in the panel")
    close(shown(panel, "alpha"), answer["alpha"][t_hover][0], f"hovered α[{t_hover}][0]")
    close(shown(panel, "dalpha"), answer["dalpha"][t_hover][0], f"hovered ∂L/∂α[{t_hover}][0]")
    ActionChains(browser).move_to_element(panel.find_element(By.CSS_SELECTOR, ".translation")).perform()
    wait(browser, lambda b: showing(panel, t, j), "the selected cell back in the panel")
    close(shown(panel, "alpha"), answer["alpha"][t][j], f"α[{t}][{j}] once the pointer left")

    # The keyboard: the arrow keys move, Enter selects.
    panel.find_element(By.CSS_SELECTOR, f"td[data-t='{t}'][data-j='{j}']").click()
    key, j2 = (Keys.ARROW_RIGHT, j + 1) if j + 1 < len(answer["source_tokens"]) else (Keys.ARROW_LEFT, j - 1)
    check(j2 >= 0, "the sentence needs two source tokens")
    browser.switch_to.active_element.send_keys(key)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait(browser, lambda b: panel.find_elements(By.CSS_SELECTOR, f"td.selected[data-t='{t}'][data-j='{j2}']"),
         f"cell ({t}, {j2}) to be selected by the keyboard")
    check_cell(server, panel, source, ref, 0, t, j2)

    # The second model's heatmap switched to the signed gradient: its legend says so.
    panels[1].find_element(By.CSS_SELECTOR, ".show-grad").click()
    wait(browser, lambda b: "∂L/∂α_ij, signed" in panels[1].find_element(By.CSS_SELECTOR, ".legend").text,
         "the ∂L/∂α legend of model 1")
    if width == WIDTHS[-1]:
        browser.set_window_size(width, 1250)
        browser.execute_script("window.scrollTo(0, 0)")  # the top: the form above the panels
        browser.save_screenshot(screenshot)

    # Step through the decoder: "first" goes to step 1 and selects its largest α.
    panel.find_element(By.CSS_SELECTOR, ".step-first").click()
    row0 = answer["alpha"][0]
    j0 = row0.index(max(row0))
    wait(browser, lambda b: panel.find_elements(By.CSS_SELECTOR, f"td.selected[data-t='0'][data-j='{j0}']"),
         "step 1 and its most attended source word")
    label = panel.find_element(By.CSS_SELECTOR, ".step-label").text
    check(label.startswith(f"step 1 of {len(answer['target_tokens'])}"), f"the step label reads {label!r}")
    step0 = check_cell(server, panel, source, ref, 0, 0, j0)["step"]


    # The worked numbers of step 1: the α column equals the API's step values.
    panel.find_element(By.CSS_SELECTOR, "details.worked summary").click()
    rows = panel.find_elements(By.CSS_SELECTOR, "table.worked")[0].find_elements(By.CSS_SELECTOR, "tbody tr")
    for jj, alpha in enumerate(step0["values"]["alpha"]["data"]):
        cells = rows[jj].find_elements(By.TAG_NAME, "td")
        close(cells[0].text, step0["values"]["e"]["data"][jj], f"worked e_{jj + 1}")
        close(cells[2].text, alpha, f"worked α_{jj + 1}")
        close(cells[4].text, step0["gradients"]["e"]["analytic"][jj], f"worked ∂L/∂e_{jj + 1}")

    # The page never scrolls sideways: wide tables scroll inside their panel.
    page_width, view_width = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth]")
    check(page_width <= view_width, f"at {width} px the page is {page_width} px wide")

    errors = console_errors(browser)
    check(not errors, f"the browser console at {width} px: {errors}")


def check_api_error(server, browser):
    """A sentence over the API's limit: the page shows the error the API returns."""
    from selenium.webdriver.common.by import By
    long_source = "a " * 40000  # 80000 bytes: over the 65536-byte sentence limit
    status, answer = server.post("/explain", {"src": long_source.strip(), "model": 0, "step": 0})
    check(400 <= status < 500 and answer.get("status") == "error", f"the API accepted an overlong sentence: {status}")
    browser.execute_script("document.getElementById('src').value = arguments[0];"
                           "document.getElementById('ask').requestSubmit();", long_source)
    box = wait(browser, lambda b: b.find_element(By.ID, "error") if b.find_element(By.ID, "error").is_displayed()
               else None, "the error box")
    check(answer["error"] in box.text, f"the page shows {box.text!r}, the API said {answer['error']!r}")
    # The one console entry allowed: the browser's own note of the refused request.
    unexpected = [e for e in console_errors(browser) if not (e["source"] == "network" and str(status) in e["message"])]
    check(not unexpected, f"the browser console after the API's error: {unexpected}")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: explorer_test.py ATTEND WORK_PARENT SCREENSHOT")
    attend, parent, screenshot = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
    chromium, driver = browser_or_skip()
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="explorer-", dir=parent)
    # Chromium's own files (its profile, and the Unix socket it makes in TMPDIR)
    # go to a folder of their own with a short path: a socket's path holds at most
    # 107 bytes, and below a deep build tree Chromium exits at once.
    short = "/tmp" if os.access("/tmp", os.W_OK) else None
    browser_dir = tempfile.mkdtemp(prefix="attend-chromium-", dir=short)
    os.environ["TMPDIR"] = browser_dir
    server, browser, status = None, None, 1
    try:
        source, ref = make_models(attend, work)
        server = Server(attend, work)
        for width in WIDTHS:
            browser = start_browser(chromium, driver, browser_dir, width)
            explore(server, browser, source, ref if width == WIDTHS[-1] else "", width, screenshot)
            if width == WIDTHS[-1]:
                check_api_error(server, browser)
            browser.quit()
            browser = None
        status = 0
    except AssertionError as e:
        print(f"FAILED: {e}")
    finally:
        if browser is not None:
            browser.quit()
        if server is not None:
            try:
                server.stop()
            except AssertionError as e:
                print(f"FAILED: {e}")
                status = 1
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(browser_dir, ignore_errors=True)
    if status == 0:
        print(f"passed at {' and '.join(map(str, WIDTHS))} px; screenshot: {screenshot}")
    return status

if __name__ == "__main__":
    sys.exit(main())
