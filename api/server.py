"""``./submit.sh api --data DIR [--host 127.0.0.1] [--port 8080] [--conf KEY=VALUE ...]``:
serve the crawl-job API over a (local) data directory with uvicorn.

``--write-openapi FILE`` writes the API's OpenAPI document instead (the copy kept in
the repository, ``api/openapi.json``, is checked against the served one by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from lib.config import ConfigError, load_config


def build_parser() -> argparse.ArgumentParser:
    """Command line of the API server."""
    parser = argparse.ArgumentParser(prog="submit.sh api", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="data directory (local)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (8080)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--conf-file", action="append", default=[], metavar="FILE")
    parser.add_argument("--write-openapi", metavar="FILE", help="write the OpenAPI document")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Serve the API (or write its OpenAPI document)."""
    args = build_parser().parse_args(argv)
    try:
        conf = load_config(args.conf_file, args.conf)
    except ConfigError as exc:
        print(f"api: {exc}", file=sys.stderr)
        return 2
    from api.app import create_app
    from api.auth import KEYS_VARIABLE, KeysFileError, api_keys

    root = os.path.abspath(args.data)
    try:
        keys = api_keys(conf)
    except KeysFileError as exc:
        print(f"api: {exc}", file=sys.stderr)
        return 2
    app = create_app(root, conf)
    if args.write_openapi:
        with open(args.write_openapi, "w", encoding="utf-8") as out:
            json.dump(app.openapi(), out, indent=2, sort_keys=True)
            out.write("\n")
        return 0
    if not keys:
        print(
            f"api: no API key configured: set {KEYS_VARIABLE}=KEY1,KEY2 in the environment,"
            " or api.keys.file to a file of keys",
            file=sys.stderr,
        )
        return 2
    import uvicorn

    print(f"api: serving {root} on http://{args.host}:{args.port}/api/v1/", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
