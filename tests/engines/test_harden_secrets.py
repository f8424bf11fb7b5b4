"""Issue 14 #5: a secret is a value that carries its secrecy.

``${secret:scope/key}`` resolves to a :class:`~sluicegate.contract.secret.Secret` (printed,
repr'd and serialised as ``***``), is accepted only in the credential keys a driver
consumes, and is revealed only at that driver. Proved end to end with a real consumer: a
PostgreSQL serve target whose role's password holds a quote, a backslash and non-ASCII.
"""

from __future__ import annotations

import json
import pickle

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.contract.secret import Secret
from sluicegate.engines.kafka_config import librdkafka_config, spark_options
from tests.conftest import run_cli

pytestmark = [pytest.mark.duckdb]

SECRET = 'pa"ss\\wörd-42'  # a quote, a backslash and non-ASCII: JSON escapes all three
ROLE = "sg_secret_role"
ENV_PW = "SLUICEGATE_SECRET_APP_PW"


def _leaks(text: str, secret: str = SECRET) -> list[str]:
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
    }
    return [f for f in forms if f in text]


def _contract(tmp_path, *, owner: str = "orders-team", serve: str = "", path: str = "land"):
    (tmp_path / "land").mkdir(exist_ok=True)
    (tmp_path / "land" / "a.json").write_text('{"id":1,"amount":5}\n{"id":2,"amount":-1}\n')
    c = tmp_path / "c.yml"
    c.write_text(
        f"name: events\nowner: '{owner}'\n"
        f"source: {{path: '{path}', format: ndjson, columns: {{id: BIGINT, amount: INTEGER}}}}\n"
        "rules: [{name: pos, expect: amount > 0}]\n"
        "gate: {warn_above: 0.9, fail_above: 0.95}\n"
        "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n" + serve
    )
    return c


def _serve(pg) -> str:  # noqa: ANN001
    return (
        "serve:\n  - name: app_db\n"
        f"    url: postgresql://{ROLE}@{pg.host}:{pg.port}/postgres\n"
        "    password: ${secret:app/pw}\n"
        "    schema: sec\n    tables: [quality_facts, dlq_summary]\n"
    )


@pytest.fixture(scope="module")
def pg_role(pg_server):  # noqa: ANN001, ANN201
    """A login role whose password is :data:`SECRET` (SQL literal: quotes doubled)."""
    pw = SECRET.replace("'", "''")
    pg_server.psql(f"DROP ROLE IF EXISTS {ROLE}")
    pg_server.psql(f"CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{pw}'")
    return pg_server


def test_a_served_secret_reaches_the_driver_and_never_appears(tmp_path, pg_role):
    c = _contract(tmp_path, serve=_serve(pg_role))
    env = {ENV_PW: SECRET}
    human = run_cli("run", str(c), env=env)
    assert human.returncode == 0, human.stderr
    assert not _leaks(human.stdout + human.stderr)
    r = run_cli("run", str(c), "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert not _leaks(r.stdout + r.stderr)
    doc = json.loads(r.stdout)
    # the driver got the plain value: PostgreSQL accepted the role's password (scram)
    served = pg_role.psql("SELECT count(*) FROM sec.dlq_summary").strip()
    assert int(served) >= 1, doc
    files = list((tmp_path / "wh.runs").rglob("*.json"))
    assert files
    for f in files:
        assert not _leaks(f.read_text(encoding="utf-8")), f
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        stored = " ".join(
            str(m) for (m,) in con.execute("SELECT metrics FROM _sluicegate_runs").fetchall()
        )
        facts = " ".join(str(row) for row in con.execute("SELECT * FROM quality_facts").fetchall())
    finally:
        con.close()
    assert "serve:app_db" in facts and not _leaks(facts)
    assert stored and not _leaks(stored)


def test_a_driver_error_about_the_secret_does_not_show_it(tmp_path, pg_role):
    c = _contract(tmp_path, serve=_serve(pg_role))
    wrong = 'wr"ong\\pässword-7'
    r = run_cli("run", str(c), "--json", env={ENV_PW: wrong})
    # a serve failure is a warning fact, never the gate; the error names the password key
    assert r.returncode == 0, r.stderr
    assert "password" in r.stdout and not _leaks(r.stdout + r.stderr, wrong)
    r = run_cli("serve", str(c), env={ENV_PW: wrong})
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert not _leaks(r.stdout + r.stderr, wrong)


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ({"owner": "${secret:app/pw}"}, "[owner]"),
        ({"path": "land/${secret:app/pw}"}, "[source.path]"),
    ],
)
def test_a_secret_outside_a_credential_key_is_a_located_contract_error(tmp_path, where, key):
    c = _contract(tmp_path, **where)
    r = run_cli("validate", str(c), env={ENV_PW: SECRET})
    assert r.returncode == 2, r.stderr
    assert f"{c}:2 {key}" in r.stderr or f"{c}:3 {key}" in r.stderr, r.stderr
    assert "holds a secret" in r.stderr and "serve[].password" in r.stderr
    assert "source.kafka.security.password" in r.stderr and "Traceback" not in r.stderr
    assert not _leaks(r.stdout + r.stderr)
    r = run_cli("run", str(c), "--json", env={ENV_PW: SECRET})
    assert r.returncode == 2 and not _leaks(r.stdout + r.stderr)
    assert not (tmp_path / "wh.duckdb").exists()  # refused before anything ran


def test_a_secret_shorter_than_8_characters_is_refused(tmp_path):
    c = _contract(tmp_path, serve=_serve_stub())
    r = run_cli("validate", str(c), env={ENV_PW: "1"})
    assert r.returncode == 2 and "at least 8" in r.stderr and "Traceback" not in r.stderr


def _serve_stub() -> str:
    return (
        "serve:\n  - name: app_db\n    url: postgresql://u@127.0.0.1:1/db\n"
        "    password: ${secret:app/pw}\n    tables: [quality_facts]\n"
    )


def test_the_loaded_value_carries_its_secrecy(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_PW, SECRET)
    loaded = load_contract(_contract(tmp_path, serve=_serve_stub()))
    pw = loaded.contract.serve[0].password
    assert isinstance(pw, Secret) and pw.reveal() == SECRET
    shown = [str(pw), f"{pw}", f"{pw:>3}", repr(pw), repr(loaded.contract)]
    shown += [
        loaded.contract.model_dump_json(),
        json.dumps(loaded.contract.model_dump(mode="json")),
    ]
    for text in shown:
        assert not _leaks(text), text
    assert str(pw) == "***" and '"password":"***"' in loaded.contract.model_dump_json()
    with pytest.raises(TypeError):
        pickle.dumps(pw)


def test_a_kafka_password_is_revealed_only_to_the_client_settings(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_PW, SECRET)
    c = tmp_path / "k.yml"
    c.write_text(
        "name: k\nsource:\n  format: kafka\n  columns: {id: BIGINT}\n  kafka:\n"
        "    bootstrap_servers: 127.0.0.1:9092\n    topics: [t]\n"
        "    security: {protocol: SASL_PLAINTEXT, sasl_mechanism: PLAIN, username: u,"
        " password: '${secret:app/pw}'}\n"
        "rules: [{name: pos, expect: id > 0}]\n"
        "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
    )
    spec = load_contract(c).contract.source.kafka
    assert str(spec.security.password) == "***" and not _leaks(repr(spec))
    assert librdkafka_config(spec, "k")["sasl.password"] == SECRET
    jaas = spark_options(spec)["kafka.sasl.jaas.config"]
    assert 'password="pa\\"ss\\\\wörd-42"' in jaas
