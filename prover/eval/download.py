"""Download the benchmarks from their canonical public sources and convert them to the common schema.

Used by ``sorryless eval --upstream``; sources (pinned commits, see
``prover/eval/benchmarks/SOURCES.md``):

- miniF2F: valid from ``deepseek-ai/DeepSeek-Prover-V1.5`` ``datasets/minif2f.jsonl``; test (the
  corrected version recent provers use) from ``Goedel-LM/Goedel-Prover-V2`` ``dataset/minif2f.jsonl``.
- ProofNet: ``deepseek-ai/DeepSeek-Prover-V1.5`` ``datasets/proofnet.jsonl`` (Lean 4 port), with the
  textbook of each item from ``zhangir-azerbayev/ProofNet`` ``benchmark/{valid,test}.jsonl``.
- PutnamBench: the ``trishullab/PutnamBench`` tarball: ``lean4/src/*.lean`` + ``informal/putnam.json``.
- ProverBench: ``deepseek-ai/DeepSeek-ProverBench`` on HuggingFace (its JSONL file).

The converted file is written to the cache folder with a ``<name>.source.json`` sidecar naming the
URLs. Without network a :class:`DatasetUnavailable` says where to put the file instead.
The snapshot shipped with the package additionally carries informal proofs and two corrected
miniF2F-valid statements; a downloaded file does not, and its sha256 differs, which every result
records.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import tarfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from prover.eval.errors import DatasetUnavailable
from prover.eval.schema import assemble_stub, check_benchmark
from sorryless.logging import get_logger

log = get_logger(__name__)

DEEPSEEK_V15 = "https://raw.githubusercontent.com/deepseek-ai/DeepSeek-Prover-V1.5/2c4ba9119eef74d0d611f494261b2c5bae98c69a"
GOEDEL_V2 = (
    "https://raw.githubusercontent.com/Goedel-LM/Goedel-Prover-V2/2e9036e118464aa96a8bebaf9f5b9d091aa3585c"
)
PROOFNET_NL = (
    "https://raw.githubusercontent.com/zhangir-azerbayev/ProofNet/509ad79710ed4f46ff5c282ed5640c1aa9ac3f30"
)
PUTNAM_TARBALL = (
    "https://codeload.github.com/trishullab/PutnamBench/tar.gz/3c9b9268ebd132d482938b8e9d242dd71fc1ebc0"
)
PROVERBENCH_HF = "deepseek-ai/DeepSeek-ProverBench"
HF = "https://huggingface.co"

TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=10.0)
MINIF2F_HEADER = "import Mathlib\nimport Aesop\n\nset_option maxHeartbeats 0\n\nopen BigOperators Real Nat Topology Rat\n\n"

_HEADER_LINE = re.compile(r"^(import|open|set_option|universe)\b")
_DOCSTRING = re.compile(r"/--.*?-/\s*", re.DOTALL)
_TRAILING_SORRY = re.compile(r":=\s*(by\s*)?sorry\s*$", re.DOTALL)
_TRAILING_BY = re.compile(r":=\s*by\s*$", re.DOTALL)
_DECL = re.compile(
    r"^(?:@\[[^\]]*\]\s*)?(?:(?:noncomputable|private|protected)\s+)*(theorem|lemma|def)\s", re.MULTILINE
)


async def _get(client: httpx.AsyncClient, url: str) -> httpx.Response:
    try:
        response = await client.get(url, follow_redirects=True)
    except httpx.TransportError as exc:
        raise DatasetUnavailable(
            f"cannot download {url} ({type(exc).__name__}: {exc}); offline? "
            "Put the benchmark JSONL files in a folder and pass --data DIR (or set SORRYLESS_BENCHMARKS_DIR), "
            "or leave out --upstream to use the snapshot shipped with sorryless"
        ) from exc
    if response.status_code != 200:
        raise DatasetUnavailable(f"GET {url} answered {response.status_code}")
    return response


def _jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def normalise_statement(text: str) -> str:
    """The declaration ending in `:= by sorry` (from `:= by`, `:=\\n  sorry`, ...)."""
    body = text.rstrip()
    if _TRAILING_SORRY.search(body):
        return _TRAILING_SORRY.sub(":= by sorry", body)
    if _TRAILING_BY.search(body):
        return _TRAILING_BY.sub(":= by sorry", body)
    return body


def _informal(prefix: str | None) -> str | None:
    if not prefix:
        return None
    text = prefix.strip()
    text = text.removeprefix("/--").removesuffix("-/")
    return text.strip() or None


_MINIF2F_PREFIXES = ("mathd_algebra", "mathd_numbertheory", "numbertheory", "induction", "algebra", "imosl")


def minif2f_tag(name: str) -> str:
    """The source prefix of a miniF2F name: `mathd_algebra`, `amc12a`, `aime`, `imo`, ..."""
    for prefix in _MINIF2F_PREFIXES:
        if name.startswith(prefix + "_"):
            return prefix
    match = re.match(r"[a-z]+\d*[a-z]?", name)
    head = match.group(0) if match else name
    return "aime" if head.startswith("aime") else head


def _decl_kind(statement: str) -> str:
    match = _DECL.search(statement)
    return match.group(1) if match else "theorem"


def _record(
    *,
    id: str,
    benchmark: str,
    split: str,
    header: str,
    preamble: str,
    statement: str,
    source: str,
    **extra: Any,
) -> dict[str, Any]:
    formal = normalise_statement(statement)
    return {
        "id": id,
        "benchmark": benchmark,
        "split": split,
        "header": header,
        "preamble": preamble,
        "formal_statement": formal,
        "decl_kind": _decl_kind(formal),
        "lean4_code": assemble_stub(header, preamble, formal),
        "statement_source": source,
        **extra,
    }


def _deepseek_style(
    row: dict[str, Any], benchmark: str, source: str, *, id: str | None = None, tags: list[str] | None = None
) -> dict[str, Any]:
    name = str(row["name"])
    return _record(
        id=id or name,
        benchmark=benchmark,
        split=str(row.get("split", "test")),
        header=str(row.get("header") or MINIF2F_HEADER),
        preamble="",
        statement=str(row["formal_statement"]),
        source=source,
        informal_statement=_informal(row.get("informal_prefix")),
        informal_proof=None,
        tags=tags if tags is not None else [minif2f_tag(name)],
    )


async def _minif2f(client: httpx.AsyncClient) -> tuple[list[dict[str, Any]], list[str]]:
    valid_url = f"{DEEPSEEK_V15}/datasets/minif2f.jsonl"
    test_url = f"{GOEDEL_V2}/dataset/minif2f.jsonl"
    valid = [r for r in _jsonl((await _get(client, valid_url)).text) if r.get("split") == "valid"]
    test = [r for r in _jsonl((await _get(client, test_url)).text) if r.get("split", "test") == "test"]
    rows = [_deepseek_style(r, "minif2f", valid_url) for r in valid]
    rows += [_deepseek_style({**r, "split": "test"}, "minif2f", test_url) for r in test]
    return rows, [valid_url, test_url]


async def _proofnet(client: httpx.AsyncClient) -> tuple[list[dict[str, Any]], list[str]]:
    url = f"{DEEPSEEK_V15}/datasets/proofnet.jsonl"
    rows = _jsonl((await _get(client, url)).text)
    books: dict[tuple[str, str], str] = {}
    proofs: dict[tuple[str, str], str] = {}
    nl_urls = [f"{PROOFNET_NL}/benchmark/{split}.jsonl" for split in ("valid", "test")]
    for nl_url in nl_urls:
        for item in _jsonl((await _get(client, nl_url)).text):
            book, _, name = str(item["id"]).partition("|")
            key = (name, " ".join(str(item.get("nl_statement", "")).split()))
            books[key] = book
            proofs[key] = str(item.get("nl_proof") or "")
    out: list[dict[str, Any]] = []
    for row in rows:
        informal = _informal(row.get("informal_prefix")) or ""
        key = (str(row["name"]), " ".join(informal.split()))
        found = books.get(key)
        book = found or ""
        record = _deepseek_style(
            row,
            "proofnet",
            url,
            id=f"{book}_{row['name']}" if book else str(row["name"]),
            tags=[book] if book else [],
        )
        record["informal_proof"] = proofs.get(key) or None
        record["name_in_source"] = row["name"]
        if record["decl_kind"] == "def":
            record["tags"] = [*record["tags"], "def_statement"]
        out.append(record)
    return out, [url, *nl_urls]


def split_putnam_file(text: str) -> tuple[str, str, str]:
    """A PutnamBench `.lean` file -> (header, preamble, theorem without its docstring)."""
    header, rest = _split_header(text)
    starts = [m.start() for m in re.finditer(r"^theorem\s", rest, re.MULTILINE)]
    if not starts:
        raise DatasetUnavailable("PutnamBench file without a theorem")
    before, theorem = rest[: starts[-1]], rest[starts[-1] :]
    preamble = _DOCSTRING.sub("", before).strip()
    return header, preamble, theorem


async def _putnambench(client: httpx.AsyncClient) -> tuple[list[dict[str, Any]], list[str]]:
    blob = (await _get(client, PUTNAM_TARBALL)).content
    lean_files: dict[str, str] = {}
    informal: Any = None
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is None:
                continue
            if parts[1:3] == ["lean4", "src"] and parts[-1].endswith(".lean"):
                lean_files[parts[-1][: -len(".lean")]] = extracted.read().decode("utf-8")
            elif parts[1:] == ["informal", "putnam.json"]:
                informal = json.loads(extracted.read().decode("utf-8"))
    items = informal if isinstance(informal, list) else list((informal or {}).values())
    nl = {str(i.get("problem_name", i.get("name", ""))): i for i in items if isinstance(i, dict)}
    out: list[dict[str, Any]] = []
    for name in sorted(lean_files):
        header, preamble, theorem = split_putnam_file(lean_files[name])
        meta = nl.get(name, {})
        answers = [
            {"name": m.group(1), "answer": m.group(2).strip()}
            for m in re.finditer(r"abbrev\s+(\S+_solution)\b[^\n]*:=\s*sorry\s*\n--\s*(.*)", preamble)
        ]
        out.append(
            _record(
                id=name,
                benchmark="putnambench",
                split="test",
                header=header,
                preamble=preamble,
                statement=theorem,
                source=f"{PUTNAM_TARBALL} lean4/src/{name}.lean",
                informal_statement=meta.get("informal_statement"),
                informal_proof=None,
                informal_solution=meta.get("informal_solution"),
                tags=list(meta.get("tags") or []),
                requires_answer=bool(answers),
                answer_formal=answers or None,
            )
        )
    return out, [PUTNAM_TARBALL]


def _split_header(text: str) -> tuple[str, str]:
    """(the leading import/open/set_option lines ending in a blank line, the rest as it was)."""
    lines = text.splitlines(keepends=True)
    cut = 0
    for i, line in enumerate(lines):
        if line.strip() and not _HEADER_LINE.match(line):
            break
        cut = i + 1
    return "".join(lines[:cut]).rstrip("\n") + "\n\n", "".join(lines[cut:])


async def _proverbench(client: httpx.AsyncClient) -> tuple[list[dict[str, Any]], list[str]]:
    listing_url = f"{HF}/api/datasets/{PROVERBENCH_HF}/tree/main"
    listing = (await _get(client, listing_url)).json()
    files = [str(f["path"]) for f in listing if str(f.get("path", "")).endswith(".jsonl")]
    if not files:
        raise DatasetUnavailable(f"no .jsonl file in {listing_url}")
    url = f"{HF}/datasets/{PROVERBENCH_HF}/resolve/main/{files[0]}"
    out: list[dict[str, Any]] = []
    for row in _jsonl((await _get(client, url)).text):
        name = str(row.get("name") or row.get("id"))
        header, preamble = _split_header(str(row.get("header", "import Mathlib\n")))
        preamble = re.sub(r"/-.*?-/\s*", "", preamble, flags=re.DOTALL).strip()
        out.append(
            _record(
                id=name,
                benchmark="proverbench",
                split="test",
                header=header,
                preamble=preamble,
                statement=_DOCSTRING.sub("", str(row["formal_statement"])),
                source=url,
                informal_statement=_informal(row.get("informal_prefix")),
                informal_proof=None,
                tags=[name.split("__")[0]] if "__" in name else [],
            )
        )
    return out, [url]


_FETCHERS: dict[str, Callable[[httpx.AsyncClient], Awaitable[tuple[list[dict[str, Any]], list[str]]]]] = {
    "minif2f": _minif2f,
    "proofnet": _proofnet,
    "putnambench": _putnambench,
    "proverbench": _proverbench,
}


async def download_benchmark(name: str, dest_dir: Path, *, client: httpx.AsyncClient | None = None) -> Path:
    """Fetch, convert and cache one benchmark; returns the JSONL path."""
    benchmark = check_benchmark(name)
    own = client is None
    http = client or httpx.AsyncClient(timeout=TIMEOUT, headers={"User-Agent": "sorryless-eval"})
    try:
        log.info("eval.download", benchmark=benchmark)
        rows, urls = await _FETCHERS[benchmark](http)
    finally:
        if own:
            await http.aclose()
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / f"{benchmark}.jsonl"
    tmp = path.with_suffix(".jsonl.part")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)
    path.with_suffix(".source.json").write_text(
        json.dumps({"source": " + ".join(urls), "records": len(rows)}, indent=2), encoding="utf-8"
    )
    return path


def download_benchmark_sync(name: str, dest_dir: Path) -> Path:
    return asyncio.run(download_benchmark(name, dest_dir))
