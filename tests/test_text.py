"""The counts hafiza writes: vault/format/text.plural and the word that agrees with the number, text.agree."""

from __future__ import annotations

from hafiza.vault.format.text import agree, plural


def test_a_count_and_its_verb_agree_with_the_number():
    def files(n: int) -> str:
        return f"{plural(n, 'file')} {agree(n, 'does', 'do')} not parse"

    assert [files(n) for n in (0, 1, 2)] == ["0 files do not parse", "1 file does not parse", "2 files do not parse"]
    assert f"{plural(1, 'file name')} {agree(1, 'differs', 'differ')}" == "1 file name differs"
    assert f"{plural(3, 'review branch')} {agree(3, 'is', 'are')}" == "3 review branches are"
    assert f"{plural(2, 'memory')} {agree(2, 'holds', 'hold')}" == "2 memories hold"
