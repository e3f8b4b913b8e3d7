"""The failure pattern table: each row is the first match for its own example lines, for
every diagnostic kind it names, and ordinary log lines match none."""

from __future__ import annotations

import pytest

from cloud import failure_patterns
from schemas.diagnostics import KINDS

BENIGN = (
    "NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>",
    "NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)",
    "NCCL INFO comm 0x55d4 rank 3 nranks 16 cudaDev 3 busId 53000 - Init COMPLETE",
    "Epoch 3/10: loss=1.234, 512 samples/s, memory 61.2 GiB of 80 GiB",
    "Using EFA with 32 interfaces",
    "Saved checkpoint to /s3/ckpt/step-1000 (timeout set to 600 s)",
)


def test_every_row_is_well_formed():
    rows = failure_patterns.patterns()
    assert len({r.id for r in rows}) == len(rows)
    for row in rows:
        assert set(row.kinds) <= set(KINDS), row.id
        assert row.examples, f"{row.id}: give the real lines it is for"
        assert row.title and len(row.meaning) > 40, row.id


@pytest.mark.parametrize("row", failure_patterns.patterns(), ids=lambda r: r.id)
def test_each_row_is_the_first_match_for_its_examples(row):
    for kind in row.kinds:
        for line in row.examples:
            found = failure_patterns.match(line, kind)
            assert found is not None and found.id == row.id, (line, kind, found and found.id)


@pytest.mark.parametrize("line", BENIGN)
def test_ordinary_lines_match_nothing(line):
    assert failure_patterns.match(line, "nccl") is None


def test_a_row_with_an_unknown_remedy_is_refused(tmp_path):
    table = tmp_path / "patterns.yaml"
    table.write_text("patterns:\n  - {id: x, kinds: [nccl], severity: error, regex: x, "
                     "title: X, meaning: m, remedy: pray}\n")
    with pytest.raises(ValueError, match="remedy"):
        failure_patterns.patterns(table)
