"""OSWorld's ``DesktopEnv`` interface over HTTP: an agent in a process of its own drives
a pool environment with pyautogui code through `OSWorldHTTPEnv`, holding only that
environment's key, and solves a real OSWorld task; the other environment's routes and
the canary refuse it; bad bodies are a 400, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cleanroom.environments.policy.http import env_key
from cleanroom.environments.pool.plan import PoolConfig
from cleanroom.environments.pool.pool import Pool
from cleanroom.rollouts.osworld_http import PoolEnvs, build_osworld_app, serving
from cleanroom.verifiers.osworld.settings import CheckSettings

REPO = Path(__file__).resolve().parents[3]
RENAME = REPO / "tests/data/osworld/tasks/os/e0df059f-28a6-4169-924f-b9623e7184cc.json"
KEY = "harness-key-for-this-test"

pytestmark = [pytest.mark.slow, pytest.mark.beside_desktops]


@pytest.fixture(scope="module")
def served(
    desktop_stack: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Pool, str]]:
    pool = Pool(PoolConfig(envs=2, programs=("writer", "terminal")), tmp_path_factory.mktemp("osw"))
    pool.start()
    try:
        envs = PoolEnvs(pool, settings=CheckSettings(screen_width=1280, screen_height=800))
        app = build_osworld_app(envs, KEY)
        with serving(app) as url:
            yield pool, url
    finally:
        pool.stop()


AGENT = """
import json, sys
from cleanroom.rollouts.osworld_http import OSWorldHTTPEnv

url, key, task_path = sys.argv[1:4]
env = OSWorldHTTPEnv(url, "env01", key)
task = json.load(open(task_path))
obs = env.reset(task_config=task)
assert obs["screenshot"][:8] == b"\\x89PNG\\r\\n\\x1a\\n"
assert obs["accessibility_tree"].startswith("<desktop-frame")
t0 = env.evaluate()
x, y = (int(v) for v in sys.argv[4:6])
env.step(f"pyautogui.click({x}, {y})", pause=0.5)
env.step("pyautogui.typewrite('mv ~/Desktop/todo_list_Jan_1 ~/Desktop/todo_list_Jan_2'); "
         "pyautogui.press('enter')", pause=1.5)
_, _, done, info = env.step("DONE", pause=0)
print(json.dumps({"t0": t0, "done": done, "info": info, "score": env.evaluate()}))
"""


def test_an_agent_in_its_own_process_solves_a_task_over_http(
    served: tuple[Pool, str], tmp_path: Path
) -> None:
    pool, url = served
    # The point an agent would read off a screenshot: the terminal's corner, which the
    # Writer window (placed at 57,50) leaves uncovered.
    terminal = next(w for w in pool.env("env01").windows() if w.wm_class == "XTerm")
    x, y = terminal.x + 10, terminal.y + 10
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(AGENT))
    proc = subprocess.run(
        [sys.executable, str(script), url, env_key(KEY, "env01"), str(RENAME), str(x), str(y)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"t0": 0.0, "done": True, "info": {"done": True}, "score": 1.0}


def test_a_key_opens_only_its_own_environment_and_bad_bodies_are_400(
    served: tuple[Pool, str],
) -> None:
    _, url = served
    mine = {"Authorization": f"Bearer {env_key(KEY, 'env01')}"}
    with httpx.Client(base_url=f"{url}/v1/osworld", trust_env=False, timeout=60) as c:
        assert c.post("/env02/evaluate", headers=mine, json={}).status_code == 401
        assert c.post("/env01/evaluate", json={}).status_code == 401
        harness = {"Authorization": f"Bearer {KEY}"}
        assert c.post("/env00/reset", headers=harness, json={}).status_code == 403
        assert c.post("/env09/reset", headers=harness, json={}).status_code == 404
        bad = c.post("/env01/step", headers=mine, content=b"{not json")
        assert bad.status_code == 400 and bad.json()["error"] == "bad_request"
        odd = c.post("/env01/step", headers=mine, json={"action": {"action_type": "JUMP"}})
        assert odd.status_code == 400
        too_long = {"action": "DONE", "pause": 1e9}
        assert c.post("/env01/step", headers=mine, json=too_long).status_code == 400
