"""Real text to build questions from: Jane Austen's six novels (Debian's r-cran-janeaustenr),
Moby Dick (r-cran-tokenizers), 70 Reuters news stories (r-cran-tm) and, optionally, gensim's
shortened English Wikipedia sample. None of it is committed: the text is fetched with the
system's package tools into a cache folder and read from there.
"""

from __future__ import annotations

import bz2
import re
import shutil
import subprocess
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

JANEAUSTENR_PACKAGE = "r-cran-janeaustenr"
NOVELS = (
    "emma",
    "mansfieldpark",
    "northangerabbey",
    "persuasion",
    "prideprejudice",
    "sensesensibility",
)
WIKI_SAMPLE_GLOB = "enwiki-latest-pages-articles1.xml-*-shortened.bz2"


class SourceError(RuntimeError):
    """The source text could not be fetched or read (with what to do about it)."""


@dataclass(frozen=True)
class Text:
    name: str  # e.g. "emma" or "wiki:Anarchism"
    paragraphs: list[str]


def _find_rdata(root: Path) -> Path | None:
    """The `.../janeaustenr/data/Rdata` stem (of Rdata.rdb / Rdata.rdx) under root, if any."""
    for rdx in sorted(root.rglob("Rdata.rdx")):
        if rdx.parent.name == "data" and rdx.with_suffix(".rdb").is_file():
            return rdx.with_suffix("")
    return None


def fetch_janeaustenr(cache_dir: Path) -> Path:
    """Download and unpack the Debian package into cache_dir (once); return the Rdata stem."""
    unpacked = fetch_debian_package(JANEAUSTENR_PACKAGE, cache_dir)
    stem = _find_rdata(unpacked)
    if stem is None:
        raise SourceError(f"{unpacked} holds no data/Rdata.rdb; an unexpected package version?")
    return stem


def locate_janeaustenr(source_dir: Path | None, cache_dir: Path) -> Path:
    """The Rdata stem: under source_dir when given, else fetched into cache_dir."""
    if source_dir is None:
        return fetch_janeaustenr(cache_dir)
    stem = _find_rdata(source_dir)
    if stem is None:
        raise SourceError(f"no janeaustenr data/Rdata.rdb and Rdata.rdx under {source_dir}")
    return stem


def read_lazyload(stem: Path) -> dict[str, object]:
    """Read R's lazy-load database (`stem.rdx` index + `stem.rdb` blobs) into Python objects.

    The index is a gzipped RDS file listing, per variable, (offset, length) in the .rdb; each
    blob is a 4-byte length followed by a zlib-compressed R serialization, which `rdata` parses.
    """
    try:
        import rdata
    except ImportError as e:
        raise SourceError("building the data set needs `pip install cheapqa[data]` (rdata)") from e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns that the .rdx has no RDS magic line
        index = rdata.read_rds(stem.with_suffix(".rdx"))
        blob = stem.with_suffix(".rdb").read_bytes()
        out: dict[str, object] = {}
        for name, (offset, length) in index["variables"].items():
            chunk = blob[int(offset) : int(offset) + int(length)]
            parsed = rdata.parser.parse_data(zlib.decompress(chunk[4:]))
            out[str(name)] = rdata.conversion.convert(parsed)
    return out


_HEADING = re.compile(r"^\s*(chapter|volume)\b", re.IGNORECASE)
_CHAPTER = re.compile(r"^\s*chapter\b", re.IGNORECASE)


def _chapters(lines: list[str]) -> list[list[str]]:
    """A novel's lines joined into paragraphs, chapter by chapter (a "Chapter" heading starts
    one); the title page and the headings are dropped."""
    first = next((i for i, line in enumerate(lines) if _HEADING.match(line)), 0)
    chapters: list[list[str]] = [[]]
    current: list[str] = []
    for line in [*lines[first:], ""]:
        line = line.strip()
        is_heading = bool(_HEADING.match(line)) or (line.isupper() and len(line.split()) < 8)
        if not line or is_heading:
            if current:
                chapters[-1].append(" ".join(current))
            current = []
            if _CHAPTER.match(line) and chapters[-1]:
                chapters.append([])
        else:
            current.append(line)
    return [c for c in chapters if c]


def austen_chapters(stem: Path) -> dict[str, list[Text]]:
    """The six novels by name (see NOVELS), each a list of chapters named `<novel>:NNN`."""
    objects = read_lazyload(stem)
    missing = [n for n in NOVELS if n not in objects]
    if missing:
        raise SourceError(f"{stem} lacks the novels {missing}")
    return {
        n: [
            Text(name=f"{n}:{i:03d}", paragraphs=chapter)
            for i, chapter in enumerate(_chapters([str(x) for x in objects[n]]), 1)  # type: ignore[attr-defined]
        ]
        for n in NOVELS
    }


def whole_novel(name: str, chapters: list[Text]) -> Text:
    """A novel as one text: its chapters' paragraphs in order (windows run across chapters)."""
    return Text(name=name, paragraphs=[p for c in chapters for p in c.paragraphs])


def find_wiki_sample() -> Path | None:
    """gensim's shortened Wikipedia dump, when gensim is installed."""
    try:
        import gensim
    except ImportError:
        return None
    found = sorted((Path(gensim.__file__).parent / "test" / "test_data").glob(WIKI_SAMPLE_GLOB))
    return found[0] if found else None


def wiki_articles(path: Path, min_paragraphs: int = 5) -> Iterator[Text]:
    """Articles of a MediaWiki XML dump (.bz2), markup stripped by gensim's `filter_wiki`."""
    import xml.etree.ElementTree as ET

    try:
        from gensim.corpora.wikicorpus import filter_wiki
    except ImportError as e:
        raise SourceError("the Wikipedia domain needs `pip install gensim`") from e
    title = ""
    with bz2.open(path, "rb") as f:
        for _, elem in ET.iterparse(f):
            tag = elem.tag.rsplit("}", 1)[-1]
            if tag == "title":
                title = elem.text or ""
            elif tag == "text" and elem.text and not elem.text.lstrip().startswith("#REDIRECT"):
                plain = filter_wiki(elem.text).replace("'''", "").replace("''", "")
                paragraphs = [
                    " ".join(p.split())
                    for p in plain.split("\n\n")
                    if len(p.split()) > 8 and not p.lstrip().startswith(("=", "*", "|"))
                ]
                if len(paragraphs) >= min_paragraphs:
                    yield Text(name=f"wiki:{title}", paragraphs=paragraphs)
            elem.clear()


TOKENIZERS_PACKAGE = "r-cran-tokenizers"  # ships Moby Dick (Project Gutenberg text) as data
_MOBY_CHAPTER = re.compile(r"^CHAPTER (\d+)\b.*$", re.MULTILINE)


def fetch_debian_package(package: str, cache_dir: Path) -> Path:
    """`apt-get download` + `dpkg-deb -x` a Debian package into cache_dir/package (once)."""
    unpacked = cache_dir / package
    if unpacked.is_dir() and any(unpacked.iterdir()):
        return unpacked
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise SourceError(
                f"`{tool}` is not available, so {package} cannot be fetched here; on a Debian "
                f"machine run `apt-get download {package}` and `dpkg-deb -x <file>.deb {unpacked}`."
            )
    cache_dir.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        ["apt-get", "download", package], cwd=cache_dir, capture_output=True, text=True
    )
    debs = sorted(cache_dir.glob(f"{package}_*.deb"))
    if run.returncode != 0 or not debs:
        raise SourceError(
            f"`apt-get download {package}` failed ({run.returncode}): {run.stderr.strip()[-300:]}"
        )
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked)], check=True)
    return unpacked


def moby_dick_chapters(cache_dir: Path) -> list[Text]:
    """Moby Dick's chapters (Debian's r-cran-tokenizers ships the Gutenberg text), one Text each,
    named `mobydick:NNN`."""
    root = fetch_debian_package(TOKENIZERS_PACKAGE, cache_dir)
    stem = _find_rdata_named(root, "tokenizers")
    text = str(read_lazyload(stem)["mobydick"][0])  # type: ignore[index]
    text = text.replace("\r\n", "\n")
    end = text.find("End of Project Gutenberg")
    text = text[: end if end > 0 else len(text)]
    marks = list(_MOBY_CHAPTER.finditer(text))
    chapters = []
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        body = text[m.end() : nxt.start() if nxt else len(text)]
        paragraphs = [" ".join(p.split()) for p in body.split("\n\n") if len(p.split()) > 3]
        if paragraphs:
            chapters.append(Text(name=f"mobydick:{int(m.group(1)):03d}", paragraphs=paragraphs))
    # The table of contents names every chapter too: keep the last text of each number.
    return list({t.name: t for t in chapters}.values())


def _find_rdata_named(root: Path, package: str) -> Path:
    for rdx in sorted(root.rglob("Rdata.rdx")):
        if rdx.parent.name == "data" and rdx.parent.parent.name == package:
            return rdx.with_suffix("")
    raise SourceError(f"no {package}/data/Rdata.rdx under {root}")


TM_PACKAGE = "r-cran-tm"  # ships 70 Reuters-21578 newswire stories (topics crude and acq)


def reuters_articles(cache_dir: Path) -> list[Text]:
    """The Reuters stories of r-cran-tm, one Text each (named `news:<topic>-<file>`), its
    paragraphs as the wire indented them: real news, a test domain only (70 short stories)."""
    import xml.etree.ElementTree as ET

    root = fetch_debian_package(TM_PACKAGE, cache_dir)
    articles = []
    for path in sorted(root.rglob("texts/*/reut-*.xml")):
        body = ET.parse(path).getroot().findtext("TEXT/BODY") or ""
        # The wire's trailer, and the <...> it puts around company names.
        body = re.sub(r"\s*Reuter\s*$", "", body).replace("<", "").replace(">", "")
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s{2,}", body) if p.strip()]
        if paragraphs:
            articles.append(Text(f"news:{path.parent.name}-{path.stem}", paragraphs))
    if not articles:
        raise SourceError(f"{root} holds no texts/*/reut-*.xml; an unexpected package version?")
    return articles
