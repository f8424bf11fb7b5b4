"""Every command, as a script meets it: ``--help`` with an example, ``--json`` on success
and on error, each document valid against the shape docs/cli.md publishes.

The shapes are read from the doc itself (``<!-- json-shape: NAME -->`` before a JSON
block), so the doc and the output cannot drift apart.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from click.testing import CliRunner

from sluicegate.cli.main import cli
from tests.conftest import REPO, copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb
DAY = "2024-01-01"
DOC = REPO / "docs" / "cli.md"


def shapes() -> dict[str, dict[str, Any]]:
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(r"<!-- json-shape: (\w+) -->\s*```json\n(.*?)```", text, re.S)
    return {name: json.loads(body) for name, body in found}


SHAPES = shapes()


def valid(doc: Any, shape: str) -> Any:
    jsonschema.validate(doc, SHAPES[shape])
    return doc


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """A group's commands through click's API: the top group imports them on use."""
    ctx = click.Context(group)
    return {n: c for n in group.list_commands(ctx) if (c := group.get_command(ctx, n))}


def leaf_commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, cmd in sorted(subcommands(group).items()):
        if isinstance(cmd, click.Group):
            out += leaf_commands(cmd, (*path, name))
        else:
            out.append((*path, name))
    return out


def invoke(*args: str) -> tuple[int, str, str]:
    """In-process, as the entry point runs it (one import of the CLI for many calls)."""
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_the_doc_publishes_a_valid_schema_for_every_shape():
    assert set(SUCCESS.values()) | {"error"} <= set(SHAPES)
    for schema in SHAPES.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_command_has_help_with_an_example_that_fits_80_columns():
    groups = [()] + [(n,) for n, c in subcommands(cli).items() if isinstance(c, click.Group)]
    for path in [*groups, *leaf_commands()]:
        r = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
        code, out = r.exit_code, r.stdout
        assert code == 0, path
        assert "Example" in out and f"sluicegate {' '.join(path)}".strip() in out, (
            f"`sluicegate {' '.join(path)} --help` shows no example"
        )
        wide = [ln for ln in out.splitlines() if len(ln) > 80]  # \b blocks are not rewrapped
        assert not wide, (path, wide)


# -- errors ------------------------------------------------------------------------------

#: Extra arguments a command needs to reach its contract (dlq show takes a key).
ARGS = {("dlq", "show"): ["123"], ("dlq", "mark"): ["--status", "rejected"]}

#: The documented shape of each command's --json on success, and the test that checks it
#: against real output (below; serve's needs a PostgreSQL server: tests/engines/test_serve.py).
SUCCESS = {
    ("validate",): "validate",
    ("compile",): "compile",
    ("run",): "run",
    ("demo",): "run",
    ("watch",): "run",
    ("facts", "latest"): "facts",
    ("facts", "trend"): "facts",
    ("facts", "attention"): "facts",
    ("facts", "ledger"): "ledger",
    ("dlq", "list"): "dlq_list",
    ("dlq", "summary"): "dlq_summary",
    ("dlq", "ledger"): "ledger",
    ("dlq", "show"): "dlq_show",
    ("dlq", "fix"): "dlq_action",
    ("dlq", "mark"): "dlq_action",
    ("dlq", "recycle"): "dlq_recycle",
    ("dlq", "history"): "dlq_history",
    ("report",): "report",
    ("snapshot",): "snapshot",
    ("serve",): "serve",
    ("schema",): "schema",
    ("init",): "init",
    ("export", "odcs"): "export_odcs",
    ("import", "odcs"): "import_odcs",
}


def has_json(path: tuple[str, ...]) -> bool:
    cmd: click.Command = cli
    for name in path:
        cmd = subcommands(cmd)[name]  # type: ignore[arg-type]
    return any("--json" in p.opts for p in cmd.params)


def test_every_command_has_json_and_a_documented_shape():
    assert [p for p in leaf_commands() if not has_json(p)] == []
    assert set(leaf_commands()) == set(SUCCESS), "a command without a documented --json shape"


def error_args(path: tuple[str, ...], tmp_path: Path) -> list[str]:
    """Arguments that make ``path`` fail with a usage or contract error (exit 2)."""
    missing = str(tmp_path / "no_such_contract.yml")
    if path == ("schema",):  # no contract to miss: an --out it cannot write
        (tmp_path / "a_file").write_text("")
        return ["--out", str(tmp_path / "a_file" / "schema.json")]
    if path == ("init",):  # data that is not there
        return ["feed", "--from", str(tmp_path / "none" / "*.csv"), "--out", missing]
    return [missing, *ARGS.get(path, [])]


def test_every_command_prints_the_error_document_with_json(tmp_path):
    seen = []
    for path in leaf_commands():
        if path == ("demo",):  # no contract to miss: a bad option, through the entry point
            r = run_cli("demo", "--dir", str(tmp_path / "d"), "--lines", "5", "--json")
            code, out, err = r.returncode, r.stdout, r.stderr
        else:
            code, out, err = invoke(*path, *error_args(path, tmp_path), "--json")
        doc = valid(json.loads(out), "error")
        assert code == doc["exit_code"] == 2, (path, out, err)
        assert "error:" in err and "Traceback" not in err
        seen.append(path)
    assert set(seen) == set(SUCCESS)
    assert not (tmp_path / "no_such_contract.yml").exists()  # init wrote no draft


def test_an_out_file_that_cannot_be_written_is_exit_2_naming_the_option(tmp_path):
    (tmp_path / "a_file").write_text("")
    code, out, err = invoke("schema", "--out", str(tmp_path / "a_file" / "s.json"), "--json")
    (entry,) = valid(json.loads(out), "error")["errors"]
    assert code == 2 and entry["path"] == "--out" and "a folder on its path is a file" in err


def test_click_usage_errors_are_the_same_document(tmp_path):
    r = run_cli("facts", "ledger", str(tmp_path / "c.yml"), "--sql", "--json")
    assert r.returncode == 2
    doc = valid(json.loads(r.stdout), "error")
    assert "--sql" in doc["errors"][0]["message"] and "No such option" in r.stderr
    # a value an option does not list is a name argument like the others: did-you-mean
    r = run_cli("facts", "attention", str(tmp_path / "c.yml"), "--fail-on", "wran", "--json")
    (entry,) = valid(json.loads(r.stdout), "error")["errors"]
    assert r.returncode == 2 and (entry["path"], entry["suggestion"]) == ("--fail-on", "warn")
    assert "did you mean 'warn'" in r.stderr


# -- success -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def orders(tmp_path_factory) -> str:
    root = copy_orders_example(tmp_path_factory.mktemp("shapes") / "orders")
    r = run_cli("run", str(root / "contract.yml"), "--date", DAY, "--json")
    assert r.returncode == 0, r.stderr
    m = valid(json.loads(r.stdout), "run")
    assert m["status"] == "warn" and "warning: gate WARN" in r.stderr
    # numbers as numbers: the gate's metric like its thresholds
    (level,) = m["gate"]["levels"]
    assert level["metric"] == pytest.approx(8 / 12, abs=1e-6) and level["threshold_warn"] == 0.05
    return str(root / "contract.yml")


@pytest.mark.parametrize(
    ("args", "shape"),
    [
        (("validate",), "validate"),
        (("compile",), "compile"),
        (("facts", "latest"), "facts"),
        (("facts", "trend"), "facts"),
        (("facts", "attention"), "facts"),
        (("facts", "ledger"), "ledger"),
        (("dlq", "list"), "dlq_list"),
        (("dlq", "summary"), "dlq_summary"),
        (("dlq", "ledger"), "ledger"),
    ],
)
def test_read_commands_json_matches_the_documented_shape(orders, args, shape):
    code, out, err = invoke(*args, orders, "--json")
    assert code == 0, err
    valid(json.loads(out), shape)


def test_dlq_changes_json_matches_the_documented_shape(orders, tmp_path):
    contract = str(Path(shutil.copytree(Path(orders).parent, tmp_path / "o")) / "contract.yml")
    rows = json.loads(invoke("dlq", "list", contract, "--json", "--limit", "0")[1])["rows"]
    key = next(r["_dlq_sk"] for r in rows if r["_reason"] == "null_customer")
    shown = valid(json.loads(invoke("dlq", "show", contract, key)[1]), "dlq_show")
    assert shown["row"]["_dlq_sk"] == key  # JSON without --json too
    code, out, _ = invoke("dlq", "fix", contract, key, "--set", "cid=10", "--json")
    assert code == 0 and valid(json.loads(out), "dlq_action")["count"] == 1
    other = next(r["_dlq_sk"] for r in rows if r["_reason"] == "non_positive_amount")
    code, out, _ = invoke("dlq", "mark", contract, other, "--status", "rejected", "--json")
    assert code == 0 and valid(json.loads(out), "dlq_action")["status"] == "rejected"
    code, out, _ = invoke("dlq", "recycle", contract, "--json")
    assert code == 0 and valid(json.loads(out), "dlq_recycle")["recycled"] == 1


def test_demo_and_watch_json(tmp_path):
    r = run_cli(
        "demo", "--feed", "orders", "--lines", "300", "--dir", str(tmp_path / "d"), "--json"
    )
    assert r.returncode == 0, r.stderr
    valid(json.loads(r.stdout), "run")
    root = copy_orders_example(tmp_path / "w")
    (root / "data" / "landing").mkdir()
    shutil.move(root / "data" / "orders.json", root / "data" / "landing" / "orders.json")
    c = root / "contract.yml"
    c.write_text(c.read_text().replace("${root}/orders.json", "${root}/landing"))
    r = run_cli("watch", str(c), "--max-batches", "1", "--date", DAY, "--json")
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    valid(json.loads(line), "run")


# -- the commands that write a file (issues 18/19) ---------------------------------------


def test_report_and_snapshot_json(orders, tmp_path):
    code, out, err = invoke("report", orders, "--out", str(tmp_path / "r.html"), "--json")
    assert code == 0, err
    doc = valid(json.loads(out), "report")
    page = tmp_path / "r.html"
    assert doc["path"] == str(page.resolve()) and doc["bytes"] == page.stat().st_size
    code, out, err = invoke("snapshot", orders, "--json")
    assert code == 0, err
    snap = valid(json.loads(out), "snapshot")
    # the report names the run it shows: the newest, the one snapshot names too
    assert (doc["run_id"], doc["logical_date"], doc["run_status"]) == (
        snap["run_id"],
        DAY,
        snap["status"],
    )
    # --run is a name argument too: a mistyped id is exit 2 with the id it was meant to be
    for cmd in ("report", "snapshot"):
        code, out, err = invoke(cmd, orders, "--run", snap["run_id"][:-1], "--json")
        (entry,) = valid(json.loads(out), "error")["errors"]
        assert code == 2 and (entry["path"], entry["suggestion"]) == ("--run", snap["run_id"])
        assert f"did you mean '{snap['run_id']}'" in err


def test_schema_json_is_the_schema_file(tmp_path):
    code, out, _ = invoke("schema", "--json")
    assert code == 0
    doc = valid(json.loads(out), "schema")
    committed = json.loads((REPO / "schema" / "contract.schema.json").read_text("utf-8"))
    assert doc["out"] is None and doc["schema"] == committed
    code, out, _ = invoke("schema", "--out", str(tmp_path / "s" / "c.json"), "--json")
    written = json.loads((tmp_path / "s" / "c.json").read_text("utf-8"))
    assert code == 0 and valid(json.loads(out), "schema")["schema"] == written == committed


def test_export_and_import_odcs_json(orders, tmp_path):
    import yaml

    odcs = tmp_path / "odcs.yaml"
    code, out, err = invoke("export", "odcs", orders, "--out", str(odcs), "--json")
    assert code == 0, err
    exported = valid(json.loads(out), "export_odcs")
    assert exported["odcs"] == yaml.safe_load(odcs.read_text("utf-8"))
    assert Path(exported["out"]).resolve() == odcs
    code, out, err = invoke("import", "odcs", str(odcs), "--json")
    assert code == 0, err
    imported = valid(json.loads(out), "import_odcs")
    assert imported["out"] is None and imported["notes"] == []
    assert imported["contract"]["name"] == "orders"
    assert set(imported["contract"]["source"]["columns"]) == {"oid", "cid", "amt", "ots"}
    # a document with parts sluicegate cannot carry: the same notes in JSON and on stderr
    foreign = REPO / "tests/data/odcs/payments.odcs.yaml"
    code, out, err = invoke("import", "odcs", str(foreign), "--json")
    notes = valid(json.loads(out), "import_odcs")["notes"]
    assert code == 0 and len(notes) > 5
    assert [ln.removeprefix("warning: ") for ln in err.splitlines()] == notes
    # the schema object to read is a name argument: a typo is exit 2 with the closest one
    code, out, _ = invoke("import", "odcs", str(foreign), "--source", "paymnts", "--json")
    (entry,) = valid(json.loads(out), "error")["errors"]
    assert code == 2 and (entry["path"], entry["suggestion"]) == ("--source", "payments")


def test_init_json_reports_the_trial_run(tmp_path):
    data = tmp_path / "orders.json"
    lines = (REPO / "examples/orders/data/orders.json").read_text("utf-8").splitlines()
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out_file = tmp_path / "draft" / "orders_draft.yml"
    code, out, err = invoke(
        "init", "orders_draft", "--from", str(data), "--out", str(out_file), "--json"
    )
    assert code == 0, err
    doc = valid(json.loads(out), "init")
    assert Path(doc["file"]).resolve() == out_file and out_file.is_file()
    led = doc["trial"]["ledger"]
    raw = sum(1 for ln in lines if ln.strip())  # an independent count of the records
    assert led["raw"] == raw == led["clean"] + led["quarantined"] + led["duplicates"]
    assert doc["trial"]["quarantine_share"] == pytest.approx(led["quarantined"] / raw)
