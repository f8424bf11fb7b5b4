"""Load a contract file: YAML → tokens → pydantic → semantic checks, with located errors.

Every problem is reported with the file, the key path and the line, all at once, so a
user fixes a contract in one pass instead of one error per run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ContractError, ContractProblem, Redactor
from .fixes import explain
from .models import Contract
from .object_store_spec import clear_text_credentials
from .suggest import closest
from .tokens import SecretProvider, TokenContext, env_secret_provider, substitute_tree
from .yamlpos import YamlSyntaxError, line_of, load_with_positions


@dataclass
class LoadedContract:
    """A validated contract and everything known about where it came from."""

    contract: Contract
    path: Path
    digest: str
    logical_date: str
    positions: dict[tuple, int] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)
    #: where the rules came from when ``rules_file:`` merged them in (for error locations)
    rules_origin: RulesOrigin | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def resolve_path(self, p: str) -> Path:
        """Relative paths in a contract resolve against the contract's folder."""
        q = Path(os.path.expanduser(p))
        return q if q.is_absolute() else (self.base_dir / q)

    def line(self, *key: str | int) -> int | None:
        return line_of(self.positions, tuple(key))

    def located(self, exc: ContractError) -> ContractError:
        """``exc`` with rules-file problems pointed at that file, and secrets redacted."""
        exc.problems = _attribute(exc.problems, self.rules_origin)
        return _redacted(exc, self.redactor)

    def error(self, key: tuple, message: str, suggestion: str | None = None) -> ContractError:
        """A ContractError located at ``key`` (a path tuple such as ('rules', 2, 'expect'))."""
        return ContractError.one(
            str(self.path),
            format_path(key),
            message,
            line=self.line(*key),
            suggestion=suggestion,
        )


MAX_CONTRACT_BYTES = 4 << 20


def _is_file(path: Path) -> bool:
    """``path.is_file()``, but a folder we may not enter is a located error, not a crash."""
    try:
        return path.is_file()
    except OSError as exc:
        raise ContractError.one(str(path), "", f"cannot read the file: {exc.strerror}") from None


def read_contract_text(path: Path) -> str:
    """The file as UTF-8 text (a BOM is dropped); anything else is a located contract error."""
    file = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_CONTRACT_BYTES:
            raise ContractError.one(file, "", f"{size} bytes: a contract is at most 4 MiB")
        data = path.read_bytes()
    except OSError as exc:
        raise ContractError.one(file, "", f"cannot read the file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ContractError.one(
            file,
            "",
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save the contract as UTF-8",
            line=line,
        ) from None
    if "\x00" in text:
        raise ContractError.one(file, "", "holds a NUL character: not a text file (UTF-16?)")
    return text


def format_path(key: tuple) -> str:
    out = ""
    for k in key:
        if isinstance(k, int):
            out += f"[{k}]"
        else:
            out += ("." if out else "") + str(k)
    return out


def parse_contract(
    path: str | Path,
    *,
    variables: Mapping[str, str] | None = None,
    logical_date: str | None = None,
    secret_provider: SecretProvider = env_secret_provider,
) -> LoadedContract:
    """Read a contract file: YAML, tokens, the rules file, the models — not its meaning.

    ``compile.contract_check.load_contract`` is this plus the checks that compile the
    rules and the model against the schema; call that one.

    Args:
        path: the YAML contract.
        variables: ``--var k=v`` overrides; they win over the contract's ``vars:``.
        logical_date: ISO date for ``${logical_date}`` (default: today, UTC).
        secret_provider: resolves ``${secret:scope/key}``.

    Raises:
        ContractError: with every problem found, each with key path and line.
    """
    path = Path(path)
    file = str(path)
    if not _is_file(path):
        raise ContractError.one(file, "", "contract file not found")
    text = read_contract_text(path)
    logical_date = logical_date or dt.datetime.now(dt.UTC).date().isoformat()
    try:
        dt.date.fromisoformat(logical_date)
    except ValueError:
        raise ContractError.one(
            file, "--logical-date", f"'{logical_date}' is not an ISO date (YYYY-MM-DD)"
        ) from None
    try:
        data, positions = load_with_positions(text)
    except YamlSyntaxError as exc:
        raise ContractError.one(file, "", f"not valid YAML: {exc}", line=exc.line) from None
    if not isinstance(data, dict):
        raise ContractError.one(file, "", "a contract is a YAML mapping (key: value lines)")

    problems: list[ContractProblem] = []
    raw_vars = data.get("vars") or {}
    if not isinstance(raw_vars, dict):
        raw_vars = {}
    merged_vars = {k: str(v) for k, v in raw_vars.items()}
    merged_vars.update({k: str(v) for k, v in (variables or {}).items()})
    ctx = TokenContext(
        variables=merged_vars, logical_date=logical_date, secret_provider=secret_provider
    )

    def token_error(key: tuple, message: str) -> None:
        problems.append(ContractProblem(format_path(key), message, line_of(positions, key)))

    for key, message in clear_text_credentials(data):  # before tokens hide the difference
        token_error(key, message)
    data = substitute_tree(data, ctx, on_error=token_error)
    redactor = Redactor(set(ctx.secrets_seen))

    rules_file = data.get("rules_file")
    origin: RulesOrigin | None = None
    if isinstance(rules_file, str):
        data, positions, origin = _merge_rules_file(
            path, rules_file, data, positions, ctx, problems
        )
        redactor.secrets |= ctx.secrets_seen

    if problems:
        raise _redacted(ContractError(file, problems), redactor)
    try:
        contract = Contract.model_validate(data)
    except ValidationError as exc:
        found = _pydantic_problems(exc, positions, data)
        raise _redacted(ContractError(file, _attribute(found, origin)), redactor) from None

    digest = hashlib.sha256(
        json.dumps(contract.model_dump(mode="json"), sort_keys=True).encode()
    ).hexdigest()
    return LoadedContract(contract, path, digest, logical_date, positions, redactor, origin)


@dataclass(frozen=True)
class RulesOrigin:
    """Where the rules merged from a ``rules_file`` came from: contract rules at index
    ``offset`` and after are the file's, listed under ``prefix`` (``rules`` or ``""``)."""

    path: Path
    offset: int
    prefix: str


_RULE_PATH = re.compile(r"^rules\[(\d+)\](.*)$")


def _attribute(problems: list[ContractProblem], origin: RulesOrigin | None) -> list:
    """Point problems in rules that came from the rules file at that file, its key path
    and its line (the merged positions already hold the file's line numbers)."""
    if origin is None:
        return problems
    for p in problems:
        m = _RULE_PATH.match(p.path)
        if m and int(m.group(1)) >= origin.offset:
            p.file = str(origin.path)
            p.path = f"{origin.prefix}[{int(m.group(1)) - origin.offset}]{m.group(2)}"
    return problems


def _redacted(exc: ContractError, redactor: Redactor) -> ContractError:
    for p in exc.problems:
        p.message = redactor(p.message)
    return ContractError(exc.file, exc.problems)


def _merge_rules_file(
    contract_path: Path,
    rules_file: str,
    data: dict,
    positions: dict,
    ctx: TokenContext,
    problems: list[ContractProblem],
) -> tuple[dict, dict, RulesOrigin | None]:
    """Append the rules of ``rules_file`` (a list, or a mapping with ``rules:``) to the contract's.

    A relative path resolves against the contract's folder (not the working directory), so
    one expectations file can serve several contracts wherever they are run from.
    """
    rpath = Path(os.path.expanduser(rules_file))
    if not rpath.is_absolute():
        rpath = Path(os.path.normpath(contract_path.parent / rpath))
    line = line_of(positions, ("rules_file",))
    if not _is_file(rpath):
        problems.append(ContractProblem("rules_file", f"rules file '{rpath}' not found", line))
        return data, positions, None
    try:
        rdata, rpos = load_with_positions(read_contract_text(rpath))
    except YamlSyntaxError as exc:
        problems.append(
            ContractProblem("rules_file", f"{rpath}:{exc.line}: not valid YAML: {exc}", line)
        )
        return data, positions, None
    prefix = ""
    if isinstance(rdata, dict) and set(rdata) <= {"rules"}:
        rdata = rdata.get("rules") or []
        rpos = {k[1:]: v for k, v in rpos.items() if k and k[0] == "rules"}
        prefix = "rules"
    if not isinstance(rdata, list):
        problems.append(
            ContractProblem(
                "rules_file",
                f"{rpath}: expected a list of rules, or a mapping with only a 'rules:' key",
                line,
            )
        )
        return data, positions, None
    rdata = substitute_tree(
        rdata,
        ctx,
        on_error=lambda key, msg: problems.append(
            ContractProblem(format_path(("rules_file",) + key), f"{rpath}: {msg}")
        ),
    )
    own = list(data.get("rules") or [])
    offset = len(own)
    data = dict(data)
    data["rules"] = own + rdata
    positions = dict(positions)
    for k, v in rpos.items():
        if k and isinstance(k[0], int):
            positions[("rules", k[0] + offset) + k[1:]] = v
    return data, positions, RulesOrigin(rpath, offset, prefix)


def _pydantic_problems(exc: ValidationError, positions: dict, data: dict) -> list[ContractProblem]:
    problems = []
    for err in exc.errors():
        loc = tuple(x for x in err["loc"] if not _is_union_tag(x))
        etype = err["type"]
        suggestion = None
        if etype == "extra_forbidden":
            bad = str(loc[-1]) if loc else "?"
            valid = _valid_keys(Contract, loc[:-1], data)
            suggestion = closest(bad, valid)
            msg = f"unknown key '{bad}'"
            if valid:
                msg += "; valid keys here: " + ", ".join(sorted(valid))
        elif etype == "missing":
            msg = f"missing required key '{loc[-1] if loc else '?'}'"
        elif (fix := explain(err)) is not None:  # the valid choices or the corrected form
            msg, suggestion = fix
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            if "input" in err and etype not in ("string_pattern_mismatch",):
                inp = err["input"]
                if not isinstance(inp, dict | list):
                    msg += f" (got {inp!r})"
        problems.append(ContractProblem(format_path(loc), msg, line_of(positions, loc), suggestion))
    return problems


def _is_union_tag(x: Any) -> bool:
    return isinstance(x, str) and (x[:1].isupper() or x.startswith("function-"))


def _valid_keys(model: type[BaseModel], loc: tuple, data: Any) -> list[str]:
    """The field names allowed at ``loc`` (walking the pydantic models along the path)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if isinstance(current, _DictOf):
            current = current.model  # ``part`` is a user-chosen name (a column, a reference)
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            f = current.model_fields.get(part) or next(
                (f for f in current.model_fields.values() if f.alias == part), None
            )
            if f is None:
                return []
            current = _inner_model(f.annotation)
        else:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]  # as written in YAML
    return []


def _inner_model(annotation: Any) -> Any:
    """Find the BaseModel inside Optional[...], list[...], dict[str, ...] annotations."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for a in typing.get_args(annotation):
        m = _inner_model(a)
        if m is not None:
            return _DictOf(m) if typing.get_origin(annotation) is dict else m
    return None


class _DictOf:
    """Marker: a mapping of user-chosen names to ``model`` (e.g. columns, references)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
