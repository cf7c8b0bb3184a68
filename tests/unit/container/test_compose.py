"""environment/docker-compose.yaml: Compose's meaning for what is read, a named refusal
for the rest, and collect hooks that must name a service that exists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cleanroom.verifiers.container.task import TaskConfigError, load_task, parse_task_toml
from cleanroom.verifiers.container.task.compose import load_compose, parse_compose
from cleanroom.verifiers.container.task.compose_model import ComposeError, Healthcheck

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "tasks"


def parse(text: str, env: dict[str, str] | None = None, folder: Path = Path("/env")):
    return parse_compose(text, folder / "docker-compose.yaml", env or {})


def test_services_start_after_what_they_depend_on() -> None:
    project = parse(
        """
services:
  main:
    depends_on: [api]
  api:
    image: api:1
    depends_on:
      db: {condition: service_healthy}
      cache:
  db:
    image: db:1
  cache:
    image: cache:1
"""
    )
    order = [s.name for s in project.services]
    assert order.index("db") < order.index("api") and order.index("cache") < order.index("api")
    api = next(s for s in project.services if s.name == "api")
    assert dict(api.depends_on) == {"db": "service_healthy", "cache": "service_started"}
    assert project.main_depends_on == (("api", "service_started"),)
    assert project.names == {"api", "db", "cache"}


def test_the_keys_cleanroom_reads_have_composes_meaning() -> None:
    project = parse(
        """
services:
  main:
    environment: [MODE=test]
  db:
    image: db:1
    command: serve --port "80 80"
    entrypoint: ["/bin/run", 1]
    environment:
      A: 1
      B: true
      FROM_HOST:
    user: 1000
    working_dir: /srv
    restart: on-failure:3
    init: true
    tmpfs: /run
    healthcheck:
      test: pg_isready
      interval: 1m30s
      timeout: 500ms
      retries: 5
      start_period: 2s
      start_interval: 1s
    x-note: kept
""",
        env={"FROM_HOST": "h"},
    )
    (db,) = project.services
    assert db.command == ("serve", "--port", "80 80")  # split, no shell
    assert db.entrypoint == ("/bin/run", "1")
    assert dict(db.environment) == {"A": "1", "B": "true", "FROM_HOST": "h"}
    assert (db.user, db.working_dir, db.restart, db.init, db.tmpfs) == (
        "1000",
        "/srv",
        "on-failure:3",
        True,
        ("/run",),
    )
    assert db.healthcheck == Healthcheck(("CMD-SHELL", "pg_isready"), 90.0, 0.5, 5, 2.0)
    assert db.healthcheck.docker() == {
        "test": ["CMD-SHELL", "pg_isready"],
        "interval": 90_000_000_000,
        "timeout": 500_000_000,
        "start_period": 2_000_000_000,
        "retries": 5,
    }
    assert project.main_environment == (("MODE", "test"),)


@pytest.mark.parametrize("test", ['["NONE"]', "{disable: true}"])
def test_a_disabled_healthcheck_disables_the_images_own(test: str) -> None:
    body = f"healthcheck: {test}" if test.startswith("{") else f"healthcheck: {{test: {test}}}"
    (db,) = parse(f"services:\n  db:\n    image: db:1\n    {body}\n").services
    assert (db.healthcheck, db.healthcheck_disabled) == (None, True)


def test_templates_are_filled_from_the_environment_given() -> None:
    (db,) = parse(
        "services:\n  db:\n    image: ${REPO}/db:${TAG:-16}\n"
        "    command: echo $$HOME ${EMPTY:-fallback} ${EMPTY-kept}\n",
        env={"REPO": "mirror", "EMPTY": ""},
    ).services
    assert db.image == "mirror/db:16"
    assert db.command == ("echo", "$HOME", "fallback")  # ${EMPTY-kept} is the empty value


def test_a_variable_the_environment_lacks_is_empty_with_a_warning_naming_it() -> None:
    project = parse("services:\n  db:\n    image: db:${TAG}\n")  # Compose's meaning
    assert project.services[0].image == "db:"
    assert project.warnings == ("services.db.image: the host has no variable TAG; it is empty",)


def test_ports_are_kept_unpublished_with_a_warning() -> None:
    project = parse("services:\n  db:\n    image: d\n    ports: ['5432:5432']\n")
    assert project.warnings == (
        "services.db.ports: kept, not published (the services reach each other on their "
        "own network; no rollout opens a port of the host)",
    )


def test_a_main_service_restated_as_harbors_mappers_write_it_is_accepted() -> None:
    project = parse(
        """
services:
  main:
    build: {context: "${CONTEXT_DIR}"}
    image: "${MAIN_IMAGE_NAME}"
    container_name: hb__client
    command: [sh, -c, sleep infinity]
    environment: ["TEST_DIR=${TEST_DIR}"]
    volumes: ["${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}"]
    deploy: {resources: {limits: {cpus: "${CPUS}", memory: "${MEMORY}"}}}
  server:
    image: srv
    container_name: hb__server
"""
    )
    assert project.main_environment == (("TEST_DIR", ""),)  # unset in Harbor too
    assert project.services[0].container_name == "hb__server"


def test_a_template_form_cleanroom_does_not_read_is_refused() -> None:
    with pytest.raises(ComposeError, match="not supported"):
        parse("services:\n  db:\n    image: db:${TAG:?set it}\n", env={"TAG": "1"})


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("services:\n  db:\n    image: d\n    platform: linux/arm64\n", "services.db.platform"),
        ("services:\n  db:\n    image: d\n    volumes: ['data:/var/lib']\n", "services.db.volumes"),
        ("services:\n  db:\n    image: d\n    networks: [back]\n", "services.db.networks"),
        ("services:\n  db:\n    image: d\n    network_mode: host\n", "services.db.network_mode"),
        ("services:\n  db:\n    image: d\n    privileged: true\n", "services.db.privileged"),
        ("services:\n  db:\n    image: d\n    env_file: db.env\n", "services.db.env_file"),
        ("services:\n  db:\n    image: d\nvolumes:\n  data: {}\n", "volumes"),
        ("services:\n  db:\n    image: d\nnetworks:\n  back: {}\n", "networks"),
        ("services:\n  main:\n    image: other\n", "services.main.image"),
        ("services:\n  main:\n    healthcheck: {test: 'true'}\n", "services.main.healthcheck"),
        ("services:\n  main:\n    volumes: ['/x:/x']\n", "services.main.volumes"),
        ("services:\n  main:\n    command: [python3, app.py]\n", "services.main.command"),
        # Harbor's own variables fill a restated main; the key is named all the same.
        (
            "services:\n  main:\n    build: {context: '${CONTEXT_DIR}', target: dev}\n",
            "services.main.build",
        ),
        (
            "services:\n  main:\n    depends_on:\n"
            "      db: {condition: service_completed_successfully}\n  db:\n    image: d\n",
            "services.main.depends_on.db.condition",
        ),
    ],
)
def test_a_key_cleanroom_does_not_run_is_refused_by_name(text: str, named: str) -> None:
    with pytest.raises(ComposeError) as caught:
        parse(text)
    assert f"{named}: not supported by cleanroom" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("services: {}\n", "names no service"),
        ("services:\n  db: {}\n", "needs an image or a build"),
        ("services:\n  db:\n    image: d\n    depends_on: [nope]\n", "'nope', which is not"),
        ("services:\n  db:\n    image: d\n    depends_on: [main]\n", "waits for main"),
        (
            "services:\n  a:\n    image: d\n    depends_on: [b]\n  b:\n    image: d\n"
            "    depends_on: [a]\n",
            "a cycle",
        ),
        ("services:\n  db:\n    image: d\n    restart: sometimes\n", "not a restart policy"),
        ("services:\n  db:\n    image: d\n    healthcheck: {interval: soon}\n", "duration"),
        ("services: [db]\n", "must be a mapping"),
        ("services:\n  db: [\n", "not valid YAML"),
    ],
)
def test_a_malformed_file_is_an_error_saying_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ComposeError, match=words):
        parse(text)


def test_a_build_is_a_folder_inside_environment(tmp_path: Path) -> None:
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc" / "Dockerfile.dev").write_text("FROM scratch\n")
    (db,) = parse(
        "services:\n  db:\n"
        "    build: {context: ./svc, dockerfile: Dockerfile.dev, args: [V=1, H, U]}\n"
        "    labels: [tier]\n",
        {"H": "from-host"},
        folder=tmp_path,
    ).services
    assert db.build is not None
    assert (db.build.context, db.build.dockerfile, db.build.args) == (
        tmp_path / "svc",
        "Dockerfile.dev",
        (("V", "1"), ("H", "from-host")),  # U is unset: the Dockerfile's default holds
    )
    assert db.labels == (("tier", ""),)
    for context, words in (("../..", "outside environment/"), ("./none", "not a folder")):
        with pytest.raises(ComposeError, match=words):
            parse(f"services:\n  db:\n    build: {context}\n", folder=tmp_path)


def test_a_compose_file_harbor_would_not_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yml").write_text("services: {}\n")
    with pytest.raises(ComposeError, match="rename"):
        load_compose(tmp_path, {})
    assert load_compose(tmp_path / "nowhere", {}) is None


def test_the_example_task_loads_its_services() -> None:
    task = load_task(EXAMPLES / "compose-store")
    assert task.compose is not None
    assert [s.name for s in task.compose.services] == ["store"]
    assert task.compose.main_depends_on == (("store", "service_healthy"),)
    (hook,) = task.config.verifier.collect
    assert (hook.service, hook.command, hook.timeout_sec) == ("store", "touch /srv/frozen", 10)


def test_collect_hooks_default_to_main_and_harbors_timeout() -> None:
    config, warnings = parse_task_toml(
        '[[verifier.collect]]\ncommand = "sync"\nuser = 0\n', Path("/t")
    )
    (hook,) = config.verifier.collect
    assert (hook.service, hook.timeout_sec, hook.user) == ("main", 60.0, "0")
    assert warnings == []


def test_a_collect_hook_for_a_service_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "task"
    shutil.copytree(EXAMPLES / "compose-store", root)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('service = "store"', 'service = "db"'))
    with pytest.raises(TaskConfigError, match="'db' is not a service"):
        load_task(root)
    (root / "environment" / "docker-compose.yaml").unlink()
    with pytest.raises(TaskConfigError, match="'db' is not a service"):
        load_task(root)


def test_a_refused_compose_key_makes_loading_the_task_fail_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "task"
    shutil.copytree(EXAMPLES / "compose-store", root)
    compose = root / "environment" / "docker-compose.yaml"
    compose.write_text(compose.read_text() + "    volumes: ['data:/srv']\n")
    with pytest.raises(TaskConfigError, match=r"services\.store\.volumes: not supported"):
        load_task(root)
