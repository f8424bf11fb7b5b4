"""The ``serve:`` section: shape and names checked at load time with a did-you-mean, the
password never shown, and the PostgreSQL statements rendered from sqlglot trees."""

from __future__ import annotations

import textwrap

import pytest
from sqlglot.errors import ErrorLevel

from sluicegate.compile import serve_sql as sq
from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.serve_plan import target_tables
from sluicegate.contract.serve_spec import redacted_url
from sluicegate.errors import ContractError
from tests.unit.test_model_contract import BASE, MODEL

SERVE = """
serve:
  - name: app_db
    url: postgresql://app@127.0.0.1:5432/app
    password: ${secret:app_db/password}
    schema: serving
    tables: [dim_customer, fct_orders, {table: mart_tier, as: tier_revenue, key: tier}, quality_facts, dlq_summary]
"""


def load(tmp_path, serve: str = SERVE):
    p = tmp_path / "c.yml"
    p.write_text(textwrap.dedent(BASE) + textwrap.dedent(MODEL) + textwrap.dedent(serve))
    return load_contract(p)


@pytest.fixture(autouse=True)
def secret(monkeypatch):
    monkeypatch.setenv("SLUICEGATE_SECRET_APP_DB_PASSWORD", "pa$$-w0rd-hidden")


def problems(tmp_path, serve: str) -> str:
    with pytest.raises(ContractError) as e:
        load(tmp_path, serve)
    text = e.value.render()
    assert "pa$$-w0rd-hidden" not in text
    return text


def test_valid_serve_section_and_defaults(tmp_path):
    loaded = load(tmp_path)
    (target,) = loaded.contract.serve
    tables = {t.target: t for t in target_tables(loaded.contract, target)}
    assert tables["dim_customer"].key == ("cid", "version")
    assert tables["fct_orders"].key == ("_logical_date", "_source_file", "_source_line")
    assert tables["fct_orders"].scope == "_logical_date"
    assert tables["tier_revenue"].key == ("tier",) and tables["tier_revenue"].name == "mart_tier"
    assert tables["quality_facts"].key == ("run_id", "check_id")
    assert "evaluated_at" in tables["quality_facts"].ignore
    assert tables["dlq_summary"].key == ("source_table", "reason", "status")
    # the password carries its secrecy: shown as ***, plain only through reveal()
    assert target.password.reveal() == "pa$$-w0rd-hidden" and target.schema_ == "serving"
    assert str(target.password) == "***" and "pa$$" not in repr(loaded.contract)
    assert "pa$$" not in loaded.contract.model_dump_json()


def test_unknown_table_suggests_the_closest(tmp_path):
    text = problems(tmp_path, SERVE.replace("[dim_customer,", "[dim_custmer,"))
    assert "unknown table 'dim_custmer'" in text and "did you mean 'dim_customer'" in text
    assert "c.yml:43 [serve[0].tables[0]]" in text  # file, line and key path


def test_unknown_key_column_suggests_the_closest(tmp_path):
    text = problems(tmp_path, SERVE.replace("key: tier}", "key: tire}"))
    assert "unknown column 'tire' of 'mart_tier'" in text and "did you mean 'tier'" in text


def test_unknown_key_in_a_target_suggests_the_closest(tmp_path):
    text = problems(tmp_path, SERVE.replace("    schema: serving", "    shema: serving"))
    assert "unknown key 'shema'" in text and "did you mean 'schema'" in text


def test_fact_key_must_keep_the_logical_date(tmp_path):
    serve = SERVE.replace("fct_orders,", "{table: fct_orders, key: [oid]},")
    assert "must include _logical_date" in problems(tmp_path, serve)


def test_url_must_be_postgresql_and_names_unique(tmp_path):
    assert "url" in problems(tmp_path, SERVE.replace("postgresql://", "mysql://"))
    twice = SERVE.replace("quality_facts, dlq_summary]", "quality_facts, dim_customer]")
    assert "table 'dim_customer' is served twice" in problems(tmp_path, twice)


def test_redacted_url_hides_a_password_written_in_the_url():
    assert redacted_url("postgresql://app:s3cr3t@db:5432/x") == "postgresql://app:***@db:5432/x"
    assert redacted_url("postgresql://app@db/x") == "postgresql://app@db/x"


def render(e) -> str:
    return e.sql("postgres", unsupported_level=ErrorLevel.RAISE)


def test_statements_render_for_postgres():
    assert render(sq.upsert("s", "t", "st", ["k", "a", "w"], ["k"], frozenset({"w"}))) == (
        'INSERT INTO "s"."t" AS "t" ("k", "a", "w") SELECT "k", "a", "w" FROM "st" '
        'ON CONFLICT("k") DO UPDATE SET "a" = "excluded"."a", "w" = "excluded"."w" '
        'WHERE ROW("t"."a") IS DISTINCT FROM ROW("excluded"."a")'
    )
    assert render(
        sq.delete_missing("s", "t", "st", ["k"], ["k", "d"], scope="d", scope_values=[])
    ) == (
        'DELETE FROM "s"."t" AS "t" WHERE FALSE AND NOT EXISTS(SELECT 1 FROM "st" AS "s" '
        'WHERE "s"."k" = "t"."k")'
    )
    assert render(sq.copy_in("st", ["k"])) == 'COPY "st" ("k") FROM STDIN WITH (FORMAT CSV)'


def test_type_mapping_and_clashes():
    assert sq.format_type(sq.pg_type("DECIMAL(10,2)")) == "numeric(10,2)"
    assert sq.format_type(sq.pg_type("HUGEINT")) == "numeric(38,0)"
    assert sq.format_type(sq.pg_type("TIMESTAMP")) == "timestamp without time zone"
    assert sq.format_type(sq.pg_type("VARCHAR")) == "text"
    wanted = [("a", "numeric(10,2)"), ("b", "text")]
    assert sq.type_clashes([("a", "numeric(12,2)"), ("b", "text")], wanted) == []
    assert sq.type_clashes([("a", "numeric(8,2)"), ("c", "text")], wanted) == [
        "column a is numeric(8,2), the load needs numeric(10,2)",
        "column b (text) is missing",
        "column c (text) is not in the served table",
    ]
    with pytest.raises(sq.TypeMappingError):
        sq.pg_type("BLOB")
