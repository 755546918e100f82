"""`python -m bench`: run every bench/bench_*.py module and print one table."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback

import bench


def main(argv: list[str]) -> int:
    wanted = set(argv)
    rows: list[dict] = []
    for module_info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        name = module_info.name
        if not name.startswith("bench_") or (wanted and name not in wanted):
            continue
        started = time.monotonic()
        try:
            module = importlib.import_module(f"bench.{name}")
            module_rows = module.run()
        except Exception:
            traceback.print_exc()
            module_rows = [{"benchmark": f"{name} FAILED", "value": "-", "unit": "", "target": "", "ok": False}]
        for row in module_rows:
            row.setdefault("group", name.removeprefix("bench_"))
        rows.extend(module_rows)
        print(f"# {name}: {time.monotonic() - started:.1f}s", file=sys.stderr)
    print_table(rows)
    return 0 if all(r.get("ok") is not False for r in rows) else 1


def print_table(rows: list[dict]) -> None:
    headers = ["group", "benchmark", "value", "unit", "target", "ok"]
    def cell(row: dict, key: str) -> str:
        value = row.get(key, "")
        if key == "ok":
            return {True: "yes", False: "NO", None: "-"}.get(value, str(value))
        if isinstance(value, float):
            return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)
    table = [[cell(r, h) for h in headers] for r in rows]
    widths = [max(len(h), *(len(line[i]) for line in table)) if table else len(h) for i, h in enumerate(headers)]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)))
    print("-|-".join("-" * w for w in widths))
    for line in table:
        print(" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
