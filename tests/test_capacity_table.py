"""insufficient-gpu's node table on a big cluster: the rows that say most are shown, in the table's own order, and the
message says how many were left out; a table that fits is shown whole and untouched."""
from kubectl_gpudoctor.rules.scheduling.capacity import SHOWN_ROWS, _shown


def _row(i, free, alloc=8):
    return {"node": f"gpu-node-{i:04d}", "resource": "nvidia.com/gpu", "allocatable": alloc,
            "used": None if free is None else alloc - free, "free": free}


def test_a_table_that_fits_is_shown_whole():
    table = [_row(i, i % 3 or None) for i in range(SHOWN_ROWS)]
    assert _shown(table, {r["node"] for r in table}) == (table, "")


def test_eligible_nodes_with_known_usage_come_first_then_roomy_ineligible_ones():
    table = [_row(i, None) for i in range(1500)]
    table[700] = _row(700, 2)            # eligible, usage known
    table[900] = _row(900, 0)            # eligible, usage known, full
    table[1200] = _row(1200, 8)          # free GPUs, but the pod may not use the node
    table[1300] = _row(1300, None)       # ineligible, unknown: least worth showing
    pool = {r["node"] for i, r in enumerate(table) if i not in (1200, 1300)}
    shown, note = _shown(table, pool)
    names = [r["node"] for r in shown]
    assert len(shown) == SHOWN_ROWS
    assert {"gpu-node-0700", "gpu-node-0900", "gpu-node-1200"} <= set(names)
    assert "gpu-node-1300" not in names
    assert names == sorted(names), "rows keep the table's order"
    assert note == (f" The table shows {SHOWN_ROWS} of its 1,500 rows; 1,497 of them with usage unknown, their pods "
                    "not listed (eligible nodes with known usage first).")


def test_known_usage_is_never_left_out_for_unknown_rows():
    table = [_row(i, None) for i in range(100)] + [_row(100 + i, i % 4) for i in range(SHOWN_ROWS)]
    shown, _ = _shown(table, {r["node"] for r in table})
    assert all(r["free"] is not None for r in shown)
