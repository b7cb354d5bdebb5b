#!/usr/bin/env python3
"""Print a markdown table (GB/s per variant per width) from a `kernlab sweep --csv` file."""
import collections, csv, sys

rows = list(csv.DictReader(open(sys.argv[1])))
order, table = [], collections.defaultdict(dict)
for r in rows:
    if r["variant"] not in order:
        order.append(r["variant"])
    table[int(r["cols"])][r["variant"]] = r["gbps"]
print("| cols | " + " | ".join(order) + " |")
print("|---:|" + "---:|" * len(order))
for c in sorted(table):
    cells = [f"{float(table[c][v]):.0f}" if table[c].get(v) else "n/a" for v in order]
    print(f"| {c} | " + " | ".join(cells) + " |")
