"""`status`, `list`, `delete`, `entities`: the documents on a running service (CHEAPQA_URL)."""

from __future__ import annotations

import argparse
from typing import Any

from cheapqa_client.cli.remote import connect, details, fail, show
from cheapqa_client.client import CheapqaError


def _status(args: argparse.Namespace) -> int:
    try:
        with connect() as client:
            found = [client.status(doc_id) for doc_id in args.ids]
    except CheapqaError as exc:
        return fail(exc)
    show(found, args.json, lambda d: f"{d.id}\t{d.status}{details(d)}")
    return 1 if any(d.status == "failed" for d in found) else 0


def _list(args: argparse.Namespace) -> int:
    try:
        with connect() as client:
            found = list(client.documents())
    except CheapqaError as exc:
        return fail(exc)
    show(found, args.json, lambda d: f"{d.id}\t{d.status}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    try:
        with connect() as client:
            for doc_id in args.ids:
                client.delete(doc_id)
                print(f"deleted {doc_id}")
    except CheapqaError as exc:
        return fail(exc)
    return 0


def _entities(args: argparse.Namespace) -> int:
    try:
        with connect() as client:
            found = client.entities(args.id)
    except CheapqaError as exc:
        return fail(exc)
    if args.json:
        print(found.model_dump_json())
        return 0
    for e in found.entities:
        print(f"{'?' if e.mentions is None else e.mentions:>5}  {e.entity}")
    if found.unplaced:
        print(f"beyond the {found.entity_slots} entity slots: {', '.join(found.unplaced)}")
    return 0


def register(sub: Any) -> None:
    json_help = "JSON on stdout"
    p = sub.add_parser("status", help="the status of indexed documents (CHEAPQA_URL)")
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(run=_status)

    p = sub.add_parser("list", help="every document on the service, with its status")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(run=_list)

    p = sub.add_parser("delete", help="delete documents from the service")
    p.add_argument("ids", nargs="+", metavar="ID")
    p.set_defaults(run=_delete)

    p = sub.add_parser(
        "entities", help="a document's entities (the names answers can give), with mentions"
    )
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(run=_entities)
