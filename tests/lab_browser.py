"""A JupyterLab page in headless Chromium, for tests and benchmarks of notebook views.

``serve_lab(directory)`` starts ``jupyter lab`` on 127.0.0.1 with a random token and no
browser (its settings, workspaces and runtime files in ``directory``, so nothing of the
user's set-up leaks in); ``open_notebook(server, cells)`` writes a notebook, opens it in
headless Chromium through selenium, runs all its cells and waits for the live controls'
canvas.  The :class:`LabPage` it gives reads JavaScript state, the canvas's data
attributes and pictures, clicks buttons, drags, presses keys and runs code in the
notebook's kernel.  Every wait is bounded.  Only loopback addresses are used.

In pytest, the ``lab`` fixture gives a :class:`Lab` (one server for the test module):
``with lab.open(["import msprings", "msprings.interact(scenes.chain(6))"]) as page: ...``.
Without Chromium (Debian's chromium and chromium-driver) or the Python packages the test
is skipped, except under CI (the CI environment variable set), where it fails.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from package_path import python_path

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CANVAS = "canvas.msprings-interact"
MODULES = ("selenium", "jupyterlab", "ipykernel", "PIL", "nbformat", "ipywidgets", "anywidget")

# JupyterLab user settings for a quiet, deterministic page: no news or update toasts, and
# every cell kept in the page (no windowing), so outputs below the fold stay rendered.
_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def problem() -> str | None:
    """Why a JupyterLab browser test cannot run here, or None when it can."""
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        return f"needs {CHROMIUM} and {CHROMEDRIVER} (Debian's chromium and chromium-driver)"
    for module in MODULES:
        try:
            __import__(module)
        except ImportError:
            return f"needs the Python package {module}"
    return None


def require() -> None:
    """Skips the calling test when :func:`problem` says so; fails instead under CI."""
    reason = problem()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the JupyterLab browser test {reason}, and CI is set")
        pytest.skip(reason)


def wait(condition: Callable[[], Any], seconds: float, what: str, every: float = 0.1) -> Any:
    """Polls ``condition`` until it returns something true (returned) or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(every)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LabServer:
    """A running ``jupyter lab``: its address (with the token), root folder and log file."""

    port: int
    token: str
    root: Path
    log: Path
    process: subprocess.Popen

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def errors(self, count: int = 5) -> list[str]:
        """The last lines of the server's log that mention an error."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line for line in text.splitlines() if "Error" in line or "Traceback" in line][-count:]


@contextlib.contextmanager
def serve_lab(directory: Path, timeout: float = 90.0) -> Iterator[LabServer]:
    """``jupyter lab`` on 127.0.0.1 serving ``directory`` (its notebooks) until the block ends."""
    directory = Path(directory)
    root = directory / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    settings = directory / "lab-settings"
    for name, values in _SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    token = secrets.token_hex(16)
    port = _free_port()
    environment = dict(
        os.environ, PYTHONPATH=python_path(), JUPYTER_RUNTIME_DIR=str(directory / "runtime"),
        JUPYTER_CONFIG_DIR=str(directory / "config"), JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(directory / "workspaces"), JUPYTER_DATA_DIR=str(directory / "data"),
        JUPYTER_PLATFORM_DIRS="1")
    log_path = directory / "jupyter-lab.log"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly",
         "--ServerApp.terminals_enabled=False", "--ServerApp.allow_root=True"],
        cwd=root, env=environment, stdout=log, stderr=subprocess.STDOUT)
    server = LabServer(port, token, root, log_path, process)

    def answering() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"jupyter lab exited: {log_path.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(server.url(f"api/status?token={token}"), timeout=2) as reply:
                return reply.status == 200
        except (OSError, urllib.error.URLError):
            return False

    try:
        wait(answering, timeout, "jupyter lab to answer", every=0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def picture(element: Any) -> np.ndarray:
    """The element's pixels as it is drawn now, (height, width, 3) int16 RGB."""
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(element.screenshot_as_png)).convert("RGB"), dtype=np.int16)


class LabPage:
    """A notebook open in JupyterLab in headless Chromium, its cells run."""

    def __init__(self, driver: Any, server: LabServer, name: str) -> None:
        self.driver = driver
        self.server = server
        self.name = name

    # -- finding things ---------------------------------------------------------------
    def canvases(self) -> list[Any]:
        """The live controls' canvases in the page, in order."""
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, CANVAS)

    @property
    def canvas(self) -> Any:
        """The first live controls' canvas."""
        return self.canvases()[0]

    def buttons(self, label: str) -> list[Any]:
        """The visible buttons whose text is ``label`` (e.g. "Play", "Step")."""
        from selenium.webdriver.common.by import By

        return [b for b in self.driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea button")
                if b.text.strip() == label and b.is_displayed()]

    def button(self, label: str, index: int = 0, seconds: float = 30.0) -> Any:
        return wait(lambda: self.buttons(label)[index:index + 1], seconds, f"the button {label!r}")[0]

    # -- reading ----------------------------------------------------------------------
    def js(self, script: str, *arguments: Any) -> Any:
        """Runs ``script`` (a function body; ``arguments`` as in selenium) and returns its result."""
        return self.driver.execute_script(script, *arguments)

    def data(self, element: Any | None = None) -> dict[str, str]:
        """The element's data attributes (``data-frames`` as ``frames``), as strings."""
        return self.js("return Object.assign({}, arguments[0].dataset);", element or self.canvas)

    def number(self, key: str, element: Any | None = None) -> float:
        """One data attribute of the canvas as a number (NaN when it is missing)."""
        value = self.data(element).get(key)
        return float(value) if value not in (None, "") else math.nan

    def picture(self, element: Any | None = None) -> np.ndarray:
        return picture(element or self.canvas)

    def screenshot(self, path: Path | str, element: Any | None = None) -> Path:
        """Saves a PNG of ``element`` (default the whole window) and returns its path."""
        path = Path(path)
        path.write_bytes((element or self.driver).screenshot_as_png if element is not None
                         else self.driver.get_screenshot_as_png())
        return path

    def python(self, code: str, seconds: float = 30.0) -> str:
        """Runs ``code`` in the notebook's kernel (not as a cell) and returns what it printed,
        and the value of its last expression; raises AssertionError on an exception."""
        self.driver.set_script_timeout(seconds)
        result = self.driver.execute_async_script(_EXECUTE, code)
        if result.get("error"):
            raise AssertionError(f"the kernel raised {result['error']} running {code!r}")
        return result.get("output", "")

    # -- acting -----------------------------------------------------------------------
    def click(self, label: str, index: int = 0) -> None:
        self.button(label, index).click()

    def press(self, keys: str | Sequence[str], element: Any | None = None) -> None:
        """Focuses ``element`` (default the canvas) by clicking nowhere special and sends keys
        (selenium's ``Keys`` constants or text)."""
        from selenium.webdriver.common.action_chains import ActionChains

        element = element or self.canvas
        self.js("arguments[0].focus();", element)
        chain = ActionChains(self.driver)
        for key in ([keys] if isinstance(keys, str) else keys):
            chain.send_keys(key)
        chain.perform()

    def drag(self, start: tuple[float, float], moves: Sequence[tuple[float, float]],
             element: Any | None = None, pause: float = 0.3) -> None:
        """Presses at ``start`` (x, y in CSS px from the element's top-left corner), moves by
        each offset in ``moves`` and releases after ``pause`` seconds."""
        from selenium.webdriver.common.action_chains import ActionChains

        element = element or self.canvas
        width, height = element.size["width"], element.size["height"]
        chain = ActionChains(self.driver).move_to_element_with_offset(
            element, int(start[0] - width / 2), int(start[1] - height / 2))
        chain.click_and_hold()
        for dx, dy in moves:
            chain.move_by_offset(int(dx), int(dy))
        chain.pause(pause).release().perform()

    def wait(self, condition: Callable[[], Any], seconds: float, what: str) -> Any:
        return wait(condition, seconds, what)


_EXECUTE = """
const code = arguments[0], done = arguments[arguments.length - 1];
const panel = window.__msprings_panel;
const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
if (!kernel) { done({error: "no kernel"}); return; }
const future = kernel.requestExecute({code, silent: false, store_history: false});
let output = "", error = null;
future.onIOPub = (message) => {
  const kind = message.header.msg_type, content = message.content;
  if (kind === "stream") output += content.text;
  else if (kind === "execute_result") output += content.data["text/plain"];
  else if (kind === "error") error = `${content.ename}: ${content.evalue}`;
};
future.done.then(() => done({output, error}), (failure) => done({output, error: String(failure)}));
"""

_READY = """
const app = window.jupyterapp, name = arguments[0];
if (!app || !app.shell) return "no app";
const panel = app.shell.currentWidget;
if (!panel || !panel.context || panel.context.path !== name) return "no notebook";
if (!panel.context.isReady) return "notebook loading";
const session = panel.sessionContext.session;
if (!session || !session.kernel) return "no kernel";
if (session.kernel.connectionStatus !== "connected" || session.kernel.status !== "idle") return "kernel busy";
window.__msprings_panel = panel;
return "ready";
"""

_RUN_ALL = """
const done = arguments[arguments.length - 1];
const app = window.jupyterapp;
app.commands.execute("notebook:run-all-cells").then(() => done("ran"), (failure) => done(String(failure)));
"""


def _driver(width: int = 1400, height: int = 1100) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--force-device-scale-factor=1", "--no-proxy-server",
                     # A hidden or occluded headless tab would otherwise slow its timers down.
                     "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                     "--disable-backgrounding-occluded-windows"):
        options.add_argument(argument)
    # The Debian driver, named explicitly: selenium-manager then downloads nothing.
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


@contextlib.contextmanager
def open_notebook(server: LabServer, cells: str | Sequence[str], name: str | None = None,
                  canvases: int = 1, timeout: float = 120.0, width: int = 1400,
                  height: int = 1100) -> Iterator[LabPage]:
    """Writes ``cells`` (code, one string per cell) as a notebook in the server's folder,
    opens it in headless Chromium, runs all cells and waits for ``canvases`` live controls'
    canvases (0: wait for none).  An assertion that fails inside names the server's last
    errors.  The kernel is shut down at the end."""
    import nbformat

    sources = [cells] if isinstance(cells, str) else list(cells)
    name = name or f"live-{secrets.token_hex(4)}.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, server.root / name)
    driver = _driver(width, height)
    page = LabPage(driver, server, name)
    try:
        driver.set_page_load_timeout(60)
        driver.get(server.url(f"lab/tree/{name}?reset&token={server.token}"))
        last = ["not asked"]

        def ready() -> bool:
            last[0] = driver.execute_script(_READY, name)
            return last[0] == "ready"

        try:
            wait(ready, timeout, "the notebook and its kernel", every=0.25)
        except AssertionError as failure:
            raise AssertionError(f"{failure} (last seen: {last[0]})") from None
        driver.set_script_timeout(30)
        ran = driver.execute_async_script(_RUN_ALL)
        assert ran == "ran", f"running the cells failed: {ran}"
        if canvases:
            wait(lambda: len(page.canvases()) >= canvases, timeout, f"{canvases} live controls' canvas(es)")
        yield page
    except AssertionError as failure:
        raise AssertionError(f"{failure}; the server's errors: {server.errors()}") from failure
    finally:
        with contextlib.suppress(Exception):
            driver.set_script_timeout(10)
            driver.execute_async_script(
                "const done = arguments[arguments.length - 1]; const p = window.__msprings_panel;"
                "if (!p) { done(0); return; } p.sessionContext.shutdown().then(() => done(1), () => done(0));")
        driver.quit()


class Lab:
    """One JupyterLab server for a test module; :meth:`open` opens a notebook in it."""

    def __init__(self, server: LabServer) -> None:
        self.server = server

    def open(self, cells: str | Sequence[str], **options: Any) -> contextlib.AbstractContextManager[LabPage]:
        return open_notebook(self.server, cells, **options)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A :class:`Lab`; skips (fails under CI) without Chromium or the packages it needs."""
    require()
    with serve_lab(tmp_path_factory.mktemp("lab")) as server:
        yield Lab(server)

