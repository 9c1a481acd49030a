"""The Whoosh analyzer: one for indexed text and queries, over the terms of text.py."""

from __future__ import annotations

from whoosh.analysis import Token, Tokenizer

from .text import fold_text, terms

__all__ = ["HafizaTokenizer", "analyzer", "fold_text", "terms"]


class HafizaTokenizer(Tokenizer):
    """Whoosh tokenizer over `terms`; filters are built in, so it is the whole analyzer."""

    def __eq__(self, other):
        return other.__class__ is self.__class__

    def __call__(self, value, positions=False, chars=False, keeporiginal=False, removestops=True,
                 start_pos=0, start_char=0, tokenize=True, mode="", **kwargs):
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        words = terms(value) if tokenize else [fold_text(value)]
        for pos, word in enumerate(words, start_pos):
            token.text = word
            token.boost = 1.0
            token.stopped = False
            if keeporiginal:
                token.original = word
            if positions:
                token.pos = pos
            if chars:  # offsets are not kept: no highlighting from the index
                token.startchar = token.endchar = start_char
            yield token


def analyzer() -> HafizaTokenizer:
    return HafizaTokenizer()
