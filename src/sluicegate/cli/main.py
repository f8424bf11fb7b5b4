"""``sluicegate`` — the command line.

One error handler maps every :class:`~sluicegate.errors.SluiceError` to a message and its
exit code: 0 pass (and warn, with a warning line), 1 gate failed, 2 contract or usage
error, 3 ledger violation, 4 upstream not ready, 5 another run holds the lock.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click

from .. import __version__
from ..errors import SluiceError
from .common import (
    CONTEXT,
    DEBUG,
    contract_argument,
    engine_option,
    examples,
    handled,
    json_option,
    logical_date_option,
    parse_vars,
    quiet_option,
    var_option,
)
from .console import CliConsole, render_run_summary, render_verdict
from .lazy import LazyGroup
from .present import check_dialect, choice_typo, emit_json, error_document, norm_path
from .process import collect_less, freeze_for_exit

date_option = logical_date_option(
    "The date this run is for (default: today, UTC). Reruns of a date replace it."
)


#: The commands defined in their own modules, imported when one of them is used (or listed
#: by --help): a ``run`` or ``compile`` does not load the others (cli/lazy.py).
LAZY_COMMANDS = {
    "dlq": "sluicegate.cli.dlq_history_cmd:dlq",  # adds ``dlq history`` to dlq_cmd.dlq
    "facts": "sluicegate.cli.facts_cmd:facts",
    "report": "sluicegate.cli.report_cmd:report_cmd",
    "snapshot": "sluicegate.cli.snapshot_cmd:snapshot_cmd",
    "watch": "sluicegate.cli.watch_cmd:watch_cmd",
    "serve": "sluicegate.cli.serve_cmd:serve_cmd",
    "schema": "sluicegate.cli.schema_cmd:schema_cmd",
    "init": "sluicegate.cli.authoring_cmd:init_cmd",
    "export": "sluicegate.cli.authoring_cmd:export_group",
    "import": "sluicegate.cli.authoring_cmd:import_group",
}


@click.group(context_settings=CONTEXT, cls=LazyGroup, lazy=LAZY_COMMANDS)
@click.version_option(__version__, prog_name="sluicegate")
@click.option(
    "--debug",
    is_flag=True,
    help="On an internal error (exit 70) print the traceback, not only its one line.",
)
def cli(debug: bool = False) -> None:
    """sluicegate — route every record to clean, quarantine or duplicates, and prove it.

    \b
    Examples (start here):
      sluicegate demo                        generate a hostile sample, run it
      sluicegate validate contract.yml       check a contract (exit 2 if bad)
      sluicegate run contract.yml            run it; --json prints the run metrics
      sluicegate compile contract.yml -d spark   the SQL a run executes

    Every command takes --help (with examples) and --json (one JSON document on
    stdout, errors included: docs/cli.md). Warnings go to stderr as "warning: …".

    Exit codes: 0 pass (warn prints a warning), 1 gate failed, 2 contract/usage error,
    3 ledger violation, 4 upstream not ready, 5 another run holds the lock, 6 a serve
    target could not be loaded (sluicegate serve), 70 internal error (a bug or a broken
    environment; --debug prints the traceback).
    """
    if debug:
        DEBUG["on"] = True
        os.environ["SLUICEGATE_DEBUG"] = "1"  # engines read it too (the Spark JVM's log)


@cli.command(context_settings=CONTEXT)
@contract_argument
@var_option()
@date_option
@json_option("Print the verdict as JSON (errors too: file, line, key path, did-you-mean).")
@handled
@examples("sluicegate validate contract.yml", "sluicegate validate contract.yml --json")
def validate(
    contract: str, variables: tuple[str, ...], logical_date: str | None, as_json: bool
) -> None:
    """Check CONTRACT: shape, types, rule SQL and column names. Exit 2 on any problem."""
    from ..compile.contract_check import load_contract
    from ..run.dryrun import check_on_empty

    loaded = load_contract(contract, variables=parse_vars(variables), logical_date=logical_date)
    check_on_empty(loaded)  # every statement of a run, on empty typed tables
    c = loaded.contract
    if as_json:
        emit_json(
            {
                "status": "ok",
                "file": norm_path(contract),
                "contract": c.name,
                "columns": len(c.source.columns),
                "rules": len(c.rules),
                "references": len(c.references),
                "digest": loaded.digest,
            },
            loaded.redactor,
        )
        return
    CliConsole().line(
        f"{contract}: ok — contract '{c.name}', {len(c.source.columns)} columns, "
        f"{len(c.rules)} rules, {len(c.references)} references (digest {loaded.digest[:12]})",
        "green",
    )


@cli.command("compile", context_settings=CONTEXT)
@contract_argument
@click.option(
    "-d",
    "--dialect",
    default="duckdb",
    show_default=True,
    help="Any sqlglot dialect: duckdb, spark, trino, snowflake, …",
)
@var_option()
@date_option
@json_option('Print {"contract", "dialect", "sql"} as JSON.')
@handled
@examples(
    "sluicegate compile contract.yml",
    "sluicegate compile contract.yml -d spark > run.sql",
)
def compile_cmd(
    contract: str,
    dialect: str,
    variables: tuple[str, ...],
    logical_date: str | None,
    as_json: bool,
) -> None:
    """Print the SQL a run of CONTRACT executes, rendered for DIALECT.

    Rendering raises on anything the dialect cannot express, instead of printing SQL that
    would not run. The reader (text → typed rows) is printed for engines that have one.
    """
    from sqlglot.errors import UnsupportedError

    from ..compile.contract_check import load_contract
    from ..compile.plan import plan, render_plan
    from ..errors import UsageError

    check_dialect(dialect)
    loaded = load_contract(contract, variables=parse_vars(variables), logical_date=logical_date)
    try:
        text = render_plan(plan(loaded, dialect), dialect)
    except UnsupportedError as exc:
        raise UsageError(f"the {dialect} dialect cannot express this contract: {exc}") from None
    if as_json:
        emit_json(
            {"contract": loaded.contract.name, "dialect": dialect, "sql": text}, loaded.redactor
        )
        return
    click.echo(loaded.redactor(text), nl=False)


@cli.command(context_settings=CONTEXT)
@contract_argument
@engine_option()
@click.option(
    "--spark-master",
    metavar="URL",
    help="Spark master: local[*] (default), local[4], spark://host:7077 (implies --engine spark).",
)
@click.option(
    "--spark-remote",
    metavar="URL",
    help="Spark Connect server, sc://host:15002 (implies --engine spark).",
)
@var_option()
@date_option
@json_option("Print the run metrics as one JSON document on stdout.")
@quiet_option()
@click.option(
    "--warn-error",
    is_flag=True,
    help="A gate WARN exits 1 like a failure, for schedulers that alert on the exit code "
    "(what a warn publishes is still published).",
)
@click.option(
    "--incremental",
    is_flag=True,
    help="Only the files not processed yet under the source path, as a micro-batch "
    "(docs/streaming.md); nothing new is a no-op (exit 0).",
)
@click.option(
    "--profile",
    is_flag=True,
    help="Time every SQL statement (DuckDB and Spark; on Spark CPU includes the driver "
    "JVM's): the slowest are printed after the run, all of them are in the run metrics "
    "under 'profile'.",
)
@handled
@examples(
    "sluicegate run contract.yml --date 2024-01-31",
    "sluicegate run contract.yml --json --warn-error > metrics.json",
    "sluicegate run contract.yml --engine spark --spark-master local[4]",
)
def run(
    contract: str,
    engine: str | None,
    spark_master: str | None,
    spark_remote: str | None,
    variables: tuple[str, ...],
    logical_date: str | None,
    as_json: bool,
    quiet: bool,
    warn_error: bool = False,
    incremental: bool = False,
    profile: bool = False,
) -> None:
    """Run CONTRACT once: bind, read, dedupe, route, prove the ledger, gate, publish.

    \b
    Exit codes: 0 pass, 0 + a warning on stderr on warn (1 with --warn-error),
    1 gate failed (quarantine and facts are published, clean rows are not),
    2 contract error, 3 ledger violation (nothing published), 4 upstream not
    ready, 5 locked by another run.
    """
    from ..api import load
    from ..api import run as api_run

    engine, engine_options = spark_options(engine, spark_master, spark_remote)
    if profile:
        engine_options = {**(engine_options or {}), "profile": True}
    if incremental:  # micro-batches over a landing directory (cli/watch_cmd.py)
        from .watch_cmd import run_incremental

        run_incremental(
            contract,
            parse_vars(variables),
            logical_date,
            engine,
            as_json=as_json,
            quiet=quiet,
            engine_options=engine_options,
            warn_error=warn_error,
        )
    loaded = load(contract, vars=parse_vars(variables), logical_date=logical_date)
    con = CliConsole(quiet=quiet, json_mode=as_json)
    try:  # the Python API's run (api.py): alerts and lineage events included
        result = api_run(loaded, engine=engine, listener=con, engine_options=engine_options)
    except SluiceError:
        raise
    except Exception:
        # an engine error: when the contract itself fails on typed tables, that is the
        # answer (exit 2, located); otherwise it stays an internal error (exit 70)
        from ..run.dryrun import check_on_empty

        check_on_empty(loaded)
        raise
    finally:
        con.stop()
    finish_run(con, result, as_json=as_json, quiet=quiet, warn_error=warn_error)


PROFILE_TOP = 12


def render_profile(con: CliConsole, m: dict[str, Any]) -> None:
    """The slowest statements of a ``run --profile``, and what ran outside statements."""
    stmts = m["profile"]
    total = m["timings"]["total"]
    wall = sum(s["wall_s"] for s in stmts)
    cpu = sum(s["cpu_s"] for s in stmts)
    con.line(
        f"profile: {len(stmts)} statements, {wall:.2f} s wall / {cpu:.2f} s CPU inside the "
        f"engine; {max(total - wall, 0.0):.2f} s of the run's {total:.2f} s outside "
        f"(Python: binding, SQL generation; on Spark also views and Delta log reads)"
    )
    con.line(f"  {'wall s':>7} {'CPU s':>6}  {'stage':<10} statement")
    for s in sorted(stmts, key=lambda s: -s["wall_s"])[:PROFILE_TOP]:
        con.line(f"  {s['wall_s']:7.3f} {s['cpu_s']:6.2f}  {s['stage']:<10} {s['sql'][:90]}")


def spark_options(
    engine: str | None, master: str | None, remote: str | None
) -> tuple[str | None, dict[str, Any] | None]:
    """``--spark-master``/``--spark-remote`` select the Spark engine and say where it runs."""
    if not master and not remote:
        return engine, None
    from ..engines.capabilities import capabilities_of

    if engine is not None and not capabilities_of(engine).cluster:
        from ..errors import UsageError

        raise UsageError(f"--spark-master and --spark-remote need --engine spark, not {engine}")
    return "spark", {"master": master, "remote": remote}


def finish_run(
    con: CliConsole, result: Any, *, as_json: bool, quiet: bool, warn_error: bool = False
) -> None:
    """Print a run's outcome and exit with its code (``--warn-error``: a warn exits 1)."""
    m = result.metrics
    if as_json:
        emit_json(m)
    elif not quiet:
        render_run_summary(con, m)
        if m.get("profile"):
            render_profile(con, m)
        con.wrapped(f"metrics: {norm_path(result.metrics_path)}")
    render_verdict(con, m, result.status)
    for t in m.get("serve") or []:  # a failed serve never changes the exit code
        if t["status"] != "pass":
            con.warning(f"serve:{t['target']} FAILED (the run's verdict stands): {t['error']}")
    code = result.exit_code
    if warn_error and result.status == "warn":
        con.error("gate WARN and --warn-error: exit 1 (what the warn published stays published)")
        code = 1
    sys.exit(code)


@cli.command(context_settings=CONTEXT)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    help="Where to write the sample and warehouse (default: a temp folder).",
)
@click.option(
    "--lines",
    type=click.IntRange(100, 100_000_000),
    default=20_000,
    show_default=True,
    help="Lines in the generated feed (at least 100).",
)
@click.option(
    "--feed",
    type=click.Choice(["retail", "orders"]),
    default="retail",
    show_default=True,
    help="retail: seed 002's hostile sales feed through the whole pipeline (star schema "
    "included); orders: seed 000's three rules.",
)
@json_option("Print the run metrics as JSON.")
@quiet_option()
@handled
@examples(
    "sluicegate demo",
    "sluicegate demo --dir .demo --lines 200000",
    "sluicegate demo --feed orders --json",
)
def demo(directory: str | None, lines: int, feed: str, as_json: bool, quiet: bool) -> None:
    """Generate a hostile sample feed and run the full pipeline on it (embedded DuckDB).

    The retail feed (default) has corrupt lines, duplicate sale ids, NULL and unknown
    foreign keys, bad quantities and prices, two timestamp formats and a customer
    changelog for the SCD2 dimension; the run goes through every stage, star schema
    included. Ends with the ledger, the per-rule counts and the gate verdict.
    """
    from ..demo import prepare_demo
    from ..run.pipeline import run_contract

    con = CliConsole(quiet=quiet, json_mode=as_json)
    try:
        loaded, where = prepare_demo(
            directory,
            lines,
            feed,
            progress=lambda step, done, total: con.progress_records(
                f"generate: {step}", done, total, "lines"
            ),
        )
    finally:
        con.stop()
    con.wrapped(f"demo feed and warehouse in {norm_path(where)}")
    try:
        result = run_contract(loaded, listener=con)
    finally:
        con.stop()
    finish_run(con, result, as_json=as_json, quiet=quiet)


def main() -> None:
    """The entry point: click's own usage errors (an unknown option, a bad choice, a
    missing argument) exit 2 like ours, with the JSON error document under ``--json``.

    The process collects garbage less often and skips the collections at exit
    (cli/process.py). Libraries' log records are not printed: without a handler Python
    prints them bare on stderr, and py4j logs a whole traceback when a Spark JVM dies
    under a run — the run's own one-line error says what happened (``--debug`` adds the
    traceback)."""
    logging.getLogger().addHandler(logging.NullHandler())
    collect_less()
    try:
        _main()
    finally:
        freeze_for_exit()


def _main() -> None:
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except click.ClickException as exc:
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:  # the usage line and where help is, as click shows them
            print(ctx.get_usage(), file=sys.stderr)
            print(f"Try '{ctx.command_path} --help' for help.", file=sys.stderr)
        typo = choice_typo(exc)  # a bad --engine/--fail-on/… value: did-you-mean
        CliConsole().error(typo.render() if typo else exc.format_message())
        if "--json" in sys.argv[1:]:
            emit_json(error_document(typo, exit_code=2, message=exc.format_message()))
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
