"""Fused, compiled JSON-lines input for the lexical scan: raw bytes in, folded documents out.

:func:`iter_batches` streams a shard piece ``(path, start, end)`` (plain with byte ranges, .gz,
.zst; opened with :func:`.corpus.open_binary`) in blocks of a few MB, cuts each block at its last
newline (the remainder is carried over) and hands the block to one numba kernel
(:func:`_extract`). Per line the kernel

* skips blank (whitespace-only) lines, which still count for line numbers;
* validates the line as one JSON object with a small strict parser (strings with escapes and
  UTF-8 checked, numbers by the JSON grammar, ``true``/``false``/``null``, nested arrays and
  objects up to depth ``MAX_DEPTH``);
* finds the top-level key equal to ``text_field`` and copies its string value, unescaped
  (``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``, surrogate pairs combined), into one output buffer.
  Plain ASCII goes 64 bytes at a time (:func:`_copy64`: one vector load, compares that find the
  first quote, backslash, control or non-ASCII byte, upper case folded, one store); on CPUs with
  a byte compress (AVX-512 VBMI2) the one-character escapes other than ``\\\\`` are taken
  inside that loop too (:func:`_copy64_esc`), so text with a newline escape every few dozen
  bytes stays in it; the last bytes go 8 at a time (SWAR) and then one by one. The text is
  **folded while copying** exactly as :func:`.hashing.normalise_bytes` folds it: ASCII
  lower-cased, every non-ASCII character replaced by its entry of a per-code-point table;
* records the span of the ``id_field`` value (a string without escapes or an integer literal);
* hashes the words of the copied document right away, while its folded bytes are in cache
  (:func:`.fastscan._word_hashes`, the scan kernel's own pass 1: same bytes, same hashes), into
  a word-hash buffer (``hw[wlo[d]:whi[d]]`` for document d).

Documents are separated by ``\\n`` in the output buffer. The word hashes go straight to
:meth:`.fastscan.KernelIndex.scan_words` (rolling n-gram hashes and lookups only): no Python
object per document. Folded bytes and ids are materialised only for the documents with matches
(verification and evidence). The line arrays are sized from the previous block; a block with
more lines is counted and extracted again.

**Fallback.** A line the kernel does not handle exactly goes to the per-line Python code
(:func:`.corpus.parse_line`: orjson/json, the same errors naming file and line), and its text is
normalised with :func:`.hashing.normalise_bytes` and its word hashes appended to the buffer
(the same compiled pass 1); its document keeps its place in the batch,
so the scan sees the same documents in the same order as the per-document path and results are
identical. Fallback lines: invalid JSON (including ``NaN``, bare control characters, a leading
BOM, depth beyond ``MAX_DEPTH``, a number literal over 1000 characters), escaped or non-ASCII-
invalid key names, a duplicate text or id key, a text value that is not a string, lone surrogate
escapes, invalid UTF-8, an id value other than a plain string without escapes or an integer
literal of at most 18 digits that ``str(int(...))`` gives back (``-0`` is not), a missing text or
id field, and text with a run (below) missing from a full run cache, or one that needs escapes
and is longer than 4 KB.

**The folding table** (:func:`tables`, built once per process, ~0.3 s). ``normalise_bytes`` folds
each maximal *run* of non-ASCII bytes as text: NFKC, ``str.lower``, Unicode punctuation blanked.
For code points 0..0x1FFFF the table stores ``fold_run_uncached(chr(cp).encode())`` (a pool of
UTF-8 outputs plus offsets). Folding a run character by character gives the run's result when
every character is context-free, i.e. NFKC and lower-casing of the run are the concatenation of
those of its characters; a character is marked context-free unless

* it is a surrogate, a Hangul jamo (conjoining U+1100-11FF, U+A960-A97F, U+D7B0-D7FF,
  compatibility U+3130-318F, half-width U+FFA0-FFDC), or its category is M* (combining marks);
* the first character of its NFKD decomposition has a non-zero combining class or can be the
  second character of a canonical composition (then it could compose with, or reorder
  against, the character before it);
* its NFKC form or the lower-cased NFKC form is empty, starts with a character of category
  M*, one with a non-zero combining class or a "second", or contains U+03A3 (the final-sigma
  rule of ``str.lower`` depends on the neighbours) or a Hangul jamo.

Marks *after* a starter in a character's own folding are allowed (the spacing accents such as
U+00B4 ´ fold to a space and a combining mark, U+0130 İ lower-cases to ``i`` and a combining
dot): the next character of a run is context-free too, so its folding starts with a starter
that is not a "second". Composition only joins a starter with a following character that is
either a non-starter or a "second" of a composition pair (a starter between them blocks it),
reordering only moves adjacent non-starters, and ``str.lower`` is context-free except for
U+03A3; so for runs of context-free characters per-character folding equals run folding (the
unit tests check it on random strings and on every pair of a sample of these characters).
Punctuation blanking is per character anyway (every pattern of ``hashing._UNI_PUNCT`` is one
whole character).

**The run cache** (:class:`RunCache`). A maximal run of non-ASCII characters that holds one that
is not context-free (a combining mark, a Devanagari vowel sign, a Hangul jamo, U+03A3, a code
point above the table) is folded whole, as ``normalise_bytes`` folds it: when the run ends the
kernel looks its UTF-8 up in a per-process hash table of run foldings and writes that folding
over the run's output (:func:`_close_run`). A run missing from the table is recorded, its line
becomes a fallback line for the moment, and after the block the Python side folds each missed
run once (:func:`.hashing.fold_run_uncached`), adds it to the table and extracts the block's
fallback lines again (:func:`_extract_again`); only lines that still fail take the Python path.
Words recur, so after a few blocks text in such scripts stays in the kernel: Hindi is scanned
at 5.9x and NFD Vietnamese at 8.2x the speed of folding those lines in Python
(``bench/contamination_scripts_bench.py``, figures in ``docs/contamination.md``).
"""
from __future__ import annotations

import logging
import os
import sys
import time
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from . import corpus as C
from . import fastscan as F
from . import hashing as H

log = logging.getLogger(__name__)

try:  # pragma: no cover - exercised when numba is installed
    import numba
except Exception:  # noqa: BLE001 - any import failure means: use the per-document path
    numba = None

TABLE_N = 0x20000          # code points covered by the folding table
MAX_DEPTH = 256            # nesting depth the validator follows (deeper: fallback)
BLOCK = 1 << 22            # bytes read per block
_JAMO = ((0x1100, 0x1200), (0x3130, 0x3190), (0xA960, 0xA980), (0xD7B0, 0xD800), (0xFFA0, 0xFFDD))

# SWAR constants of the ASCII copy (8 bytes in a uint64)
_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x22) * _ONES
_BACKSLASHES = np.uint64(0x5C) * _ONES
_SPACES = np.uint64(0x20) * _ONES
_ABOVE_A = np.uint64(0x80 - 0x41) * _ONES       # high bit set: byte >= 'A' (bytes < 0x80)
_ABOVE_Z = np.uint64(0x80 - 0x5B) * _ONES       # high bit set: byte > 'Z'
_TWO = np.uint64(2)

# string byte classes: 0 plain ASCII, 1 '"', 2 '\\', 3 control character, 4 non-ASCII
_CLS = np.zeros(256, dtype=np.uint8)
_CLS[:0x20] = 3
_CLS[ord('"')] = 1
_CLS[ord("\\")] = 2
_CLS[0x80:] = 4
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32
# one-character escapes: the byte after the backslash -> the character, lower-cased
_ESC = np.zeros(256, dtype=np.uint8)
for _k, _v in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    _ESC[_k] = _v
# bytes.strip() whitespace (a line of only these is blank); \n ends the line
_BLANK = np.zeros(256, dtype=np.uint8)
for _c in b" \t\r\x0b\x0c":
    _BLANK[_c] = 1


@dataclass
class Tables:
    ok: np.ndarray        # uint8[TABLE_N]: 1 if the code point is context-free
    off: np.ndarray       # int64[TABLE_N + 1]: its folded UTF-8 is pool[off[cp]:off[cp + 1]]
    pool: np.ndarray      # uint8
    max_expand: int       # bound on output bytes per input byte


_TABLES: list[Tables] = []


def _is_jamo(cp: int) -> bool:
    return any(a <= cp < b for a, b in _JAMO)


def _composition_seconds() -> set[int]:
    """Code points that can be the second character of a canonical composition."""
    sec = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))    # Hangul V and T jamo
    for cp in range(0x30000):
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                sec.add(int(parts[1], 16))
    return sec


def context_free(cp: int, seconds: set[int]) -> bool:
    """True when folding ``chr(cp)`` alone gives its share of any run it stands in (module doc)."""
    if 0xD800 <= cp < 0xE000 or _is_jamo(cp) or cp < 0x80:
        return False
    c = chr(cp)
    if unicodedata.category(c).startswith("M"):
        return False
    first = unicodedata.normalize("NFKD", c)[0]
    if unicodedata.combining(first) or ord(first) in seconds:
        return False
    s = unicodedata.normalize("NFKC", c)
    for t in (s, s.lower()):
        if not t:
            return False
        f = t[0]                   # a starter that nothing before it can compose with
        if unicodedata.category(f).startswith("M") or unicodedata.combining(f) or ord(f) in seconds:
            return False
        if any(x == "\u03a3" or _is_jamo(ord(x)) for x in t):
            return False
    return True


def tables() -> Tables:
    """The per-code-point folding table (built on first use, once per process)."""
    if not _TABLES:
        seconds = _composition_seconds()
        ok = np.zeros(TABLE_N, dtype=np.uint8)
        parts: list[bytes] = []
        lens = np.zeros(TABLE_N, dtype=np.int64)
        expand = 1
        for cp in range(0x80, TABLE_N):
            if not context_free(cp, seconds):
                continue
            raw = chr(cp).encode("utf-8")
            out = H.fold_run_uncached(raw)
            ok[cp] = 1
            lens[cp] = len(out)
            parts.append(out)
            expand = max(expand, -(-len(out) // len(raw)))
        off = np.zeros(TABLE_N + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        pool = np.frombuffer(b"".join(parts), dtype=np.uint8).copy()
        _TABLES.append(Tables(ok, off, pool, expand))
    return _TABLES[0]


# -- the kernel ------------------------------------------------------------------------------

_load8 = F._load8
_trailing_zeros = F._trailing_zeros


def _has_compress() -> bool:
    """True when this CPU compresses bytes in one instruction (AVX-512 VBMI2); elsewhere
    LLVM would compress byte by byte, so escapes take the scalar path instead."""
    return F.cpu_has("avx512vbmi2")


_COMPRESS = _has_compress()
if numba is not None:
    from llvmlite import ir as _ir
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _store8(typingctx, arr, idx, val):
        """Store a uint64 as the 8 bytes arr[idx:idx + 8] (unaligned; no checks)."""
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), _ir.IntType(64).as_pointer())
            builder.store(args[2], ptr, align=1)
            return context.get_dummy_value()
        return _types.void(arr, idx, val), codegen

    @_intrinsic
    def _copy64(typingctx, src, i, dst, o):
        """Copy the 64 bytes src[i:i + 64] to dst[o:o + 64] with 'A'..'Z' lower-cased; returns
        the mask of the bytes that end plain ASCII string content (bit j: src[i + j] is '"',
        '\\', below 0x20 or at least 0x80). One vector load, five compares, one store."""
        def codegen(context, builder, sig, args):
            splat = F._ir_splat
            x = builder.load(F._ir_ptr(context, builder, sig, args, 0), align=1)
            spec = builder.or_(
                builder.or_(builder.icmp_unsigned("==", x, splat(0x22)),
                            builder.icmp_unsigned("==", x, splat(0x5C))),
                builder.or_(builder.icmp_unsigned("<", x, splat(0x20)),
                            builder.icmp_signed("<", x, splat(0))))
            builder.store(F._ir_lower(builder, x), F._ir_ptr(context, builder, sig, args, 2),
                          align=1)
            return builder.bitcast(spec, _ir.IntType(64))
        return _types.uint64(src, i, dst, o), codegen

    @_intrinsic
    def _copy64_esc(typingctx, src, i, dst, o):
        """As :func:`_copy64`, also through one-character escapes other than ``\\\\``: the
        64 bytes at src[i:] up to the first stop (an unescaped quote, a control or non-ASCII
        byte, or a backslash not followed by one of ``n t r b f " /``) are written to dst[o:]
        lower-cased, each escape as its character (a compress in the register, then one 64-byte
        store: 7% faster than a compress-store to memory on this machine's Zen 5, measured; the
        bytes past the m written are overwritten later or never read). Returns ``p | m << 8 |
        e << 16``: p bytes consumed (64: no stop), m bytes written, e escapes among them."""
        def codegen(context, builder, sig, args):
            i1, i64 = _ir.IntType(1), _ir.IntType(64)
            vt, mt = F._V64, _ir.VectorType(i1, 64)
            splat = F._ir_splat

            def eq(v):
                return builder.icmp_unsigned("==", x, splat(v))

            def bits(m):
                return builder.bitcast(m, i64)
            x = builder.load(F._ir_ptr(context, builder, sig, args, 0), align=1)
            bs = bits(eq(0x5C))
            simple = eq(0x6E)
            for c in (0x74, 0x72, 0x62, 0x66, 0x22, 0x2F):
                simple = builder.or_(simple, eq(c))
            one = _ir.Constant(i64, 1)
            bad = builder.and_(bs, builder.not_(builder.lshr(bits(simple), one)))
            escaped = builder.shl(bs, one)
            stop = builder.or_(
                builder.or_(builder.and_(bits(eq(0x22)), builder.not_(escaped)), bad),
                bits(builder.or_(builder.icmp_unsigned("<", x, splat(0x20)),
                                 builder.icmp_signed("<", x, splat(0)))))
            p = builder.cttz(stop, _ir.Constant(i1, 0))
            full = builder.icmp_unsigned("==", p, _ir.Constant(i64, 64))
            valid = builder.select(full, _ir.Constant(i64, -1),
                                   builder.sub(builder.shl(one, p), one))
            keep = builder.and_(builder.not_(bs), valid)
            y = F._ir_lower(builder, x)
            r = x
            for c, v in ((0x6E, 10), (0x74, 9), (0x72, 13), (0x62, 8), (0x66, 12)):
                r = builder.select(eq(c), splat(v), r)
            y = builder.select(builder.bitcast(escaped, mt), r, y)
            fn = F._ir_fn(builder, "llvm.experimental.vector.compress.v64i8", vt, [vt, mt, vt])
            z = builder.call(fn, [y, builder.bitcast(keep, mt), _ir.Constant(vt, None)])
            builder.store(z, F._ir_ptr(context, builder, sig, args, 2), align=1)
            m = builder.ctpop(keep)
            e = builder.ctpop(builder.and_(bs, valid))
            return builder.or_(builder.or_(p, builder.shl(m, _ir.Constant(i64, 8))),
                               builder.shl(e, _ir.Constant(i64, 16)))
        return _types.uint64(src, i, dst, o), codegen
else:  # (the kernel only runs compiled; this keeps the module importable)
    def _copy64_esc(src, i, dst, o):
        raise NotImplementedError

    def _store8(arr, idx, val):
        arr[idx:idx + 8] = np.frombuffer(int(val).to_bytes(8, "little"), np.uint8)

    def _copy64(src, i, dst, o):
        seg = src[i:i + 64]
        dst[o:o + 64] = _LOWER[seg]
        return np.uint64(sum(1 << j for j, c in enumerate(seg.tolist()) if _CLS[c]))


def _ws(buf, i, n):
    while i < n:
        c = buf[i]
        if c == 32 or c == 9 or c == 13:
            i += 1
        else:
            break
    return i


def _utf8(buf, i, n):
    """(code point, length) of the UTF-8 character at i; length 0 if invalid (strict: no
    overlong forms, no surrogates, nothing above U+10FFFF)."""
    c0 = np.int64(buf[i])
    if c0 < 0xC2:
        return 0, 0
    if c0 < 0xE0:
        if i + 1 < n and (buf[i + 1] & 0xC0) == 0x80:
            return ((c0 & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F), 2
        return 0, 0
    if c0 < 0xF0:
        if i + 2 >= n:
            return 0, 0
        c1 = np.int64(buf[i + 1])
        c2 = np.int64(buf[i + 2])
        if (c1 & 0xC0) != 0x80 or (c2 & 0xC0) != 0x80:
            return 0, 0
        if (c0 == 0xE0 and c1 < 0xA0) or (c0 == 0xED and c1 >= 0xA0):
            return 0, 0
        return ((c0 & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F), 3
    if c0 < 0xF5:
        if i + 3 >= n:
            return 0, 0
        c1 = np.int64(buf[i + 1])
        c2 = np.int64(buf[i + 2])
        c3 = np.int64(buf[i + 3])
        if (c1 & 0xC0) != 0x80 or (c2 & 0xC0) != 0x80 or (c3 & 0xC0) != 0x80:
            return 0, 0
        if (c0 == 0xF0 and c1 < 0x90) or (c0 == 0xF4 and c1 >= 0x90):
            return 0, 0
        return (((c0 & 0x07) << 18) | ((c1 & 0x3F) << 12) | ((c2 & 0x3F) << 6)
                | (c3 & 0x3F)), 4
    return 0, 0


def _hex4(buf, i, n):
    """Value of 4 hex digits at i, -1 if not."""
    if i + 4 > n:
        return -1
    v = 0
    for q in range(4):
        c = buf[i + q]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return -1
        v = v * 16 + d
    return v


def _escape(buf, i, n):
    """(code point, index after) of the escape whose backslash is at i; (-1, -1) if invalid or
    a lone surrogate."""
    if i + 1 >= n:
        return -1, -1
    d = buf[i + 1]
    if d == 34 or d == 92 or d == 47:
        return np.int64(d), i + 2
    if d == 98:
        return 8, i + 2
    if d == 102:
        return 12, i + 2
    if d == 110:
        return 10, i + 2
    if d == 114:
        return 13, i + 2
    if d == 116:
        return 9, i + 2
    if d != 117:
        return -1, -1
    v = _hex4(buf, i + 2, n)
    if v < 0 or 0xDC00 <= v < 0xE000:
        return -1, -1
    if 0xD800 <= v < 0xDC00:
        if i + 12 > n or buf[i + 6] != 92 or buf[i + 7] != 117:
            return -1, -1
        w = _hex4(buf, i + 8, n)
        if w < 0xDC00 or w >= 0xE000:
            return -1, -1
        return 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00), i + 12
    return v, i + 6


def _skip_string(buf, i, n, cls):
    """Index after the closing quote of the string whose content starts at i; -1 if invalid."""
    while i < n:
        k = cls[buf[i]]
        if k == 0:
            i += 1
        elif k == 1:
            return i + 1
        elif k == 2:
            cp, i = _escape(buf, i, n)
            if cp < 0:
                return -1
        elif k == 3:
            return -1
        else:
            cp, ln = _utf8(buf, i, n)
            if ln == 0:
                return -1
            i += ln
    return -1


def _number(buf, i, n):
    """Index after the JSON number at i; -1 if invalid or over 1000 characters."""
    s = i
    if buf[i] == 45:
        i += 1
    if i >= n:
        return -1
    c = buf[i]
    if c == 48:
        i += 1
    elif 49 <= c <= 57:
        while i < n and 48 <= buf[i] <= 57:
            i += 1
    else:
        return -1
    if i < n and buf[i] == 46:
        i += 1
        if i >= n or not (48 <= buf[i] <= 57):
            return -1
        while i < n and 48 <= buf[i] <= 57:
            i += 1
    if i < n and (buf[i] == 101 or buf[i] == 69):
        i += 1
        if i < n and (buf[i] == 43 or buf[i] == 45):
            i += 1
        if i >= n or not (48 <= buf[i] <= 57):
            return -1
        while i < n and 48 <= buf[i] <= 57:
            i += 1
    if i - s > 1000:
        return -1
    return i


def _literal(buf, i, n, a, b, c, d, e, ln):
    if i + ln > n or buf[i] != a or buf[i + 1] != b or buf[i + 2] != c or buf[i + 3] != d:
        return -1
    if ln == 5 and buf[i + 4] != e:
        return -1
    return i + ln


def _plain_string(buf, i, n, cls):
    """Index of the closing quote of a string without escapes or control characters whose
    content starts at i (valid UTF-8 checked); -1 if it is not such a string."""
    while i < n:
        k = cls[buf[i]]
        if k == 0:
            i += 1
        elif k == 4:
            cp, ln = _utf8(buf, i, n)
            if ln == 0:
                return -1
            i += ln
        else:
            break
    if i >= n or buf[i] != 34:
        return -1
    return i


def _member_key(buf, i, n, cls):
    """At a member's key (i at its quote): index of its value (after ':' and spaces), -1."""
    if i >= n or buf[i] != 34:
        return -1
    i = _skip_string(buf, i + 1, n, cls)
    if i < 0:
        return -1
    i = _ws(buf, i, n)
    if i >= n or buf[i] != 58:
        return -1
    return _ws(buf, i + 1, n)


def _skip_value(buf, i, n, cls, stack):
    """Index after the JSON value at i (nested containers followed with ``stack``); -1."""
    depth = 0
    while True:
        if i >= n:
            return -1
        c = buf[i]
        if c == 34:
            i = _skip_string(buf, i + 1, n, cls)
        elif c == 123 or c == 91:
            j = _ws(buf, i + 1, n)
            if j < n and buf[j] == c + 2:           # '}' or ']': empty
                i = j + 1
            else:
                if depth >= stack.shape[0]:
                    return -1
                stack[depth] = c
                depth += 1
                i = _member_key(buf, j, n, cls) if c == 123 else j
                if i < 0:
                    return -1
                continue
        elif c == 45 or 48 <= c <= 57:
            i = _number(buf, i, n)
        elif c == 116:
            i = _literal(buf, i, n, 116, 114, 117, 101, 0, 4)
        elif c == 102:
            i = _literal(buf, i, n, 102, 97, 108, 115, 101, 5)
        elif c == 110:
            i = _literal(buf, i, n, 110, 117, 108, 108, 0, 4)
        else:
            return -1
        if i < 0:
            return -1
        while True:                                  # after a complete value
            if depth == 0:
                return i
            i = _ws(buf, i, n)
            if i >= n:
                return -1
            c = buf[i]
            top = stack[depth - 1]
            if c == 44:
                i = _ws(buf, i + 1, n)
                if top == 123:
                    i = _member_key(buf, i, n, cls)
                    if i < 0:
                        return -1
                break
            if c == top + 2:
                depth -= 1
                i += 1
                continue
            return -1


def _run_goes_on(buf, i, n):
    """True when the string character at i is non-ASCII (a UTF-8 lead byte or an escape of a
    code point >= 0x80): it continues a non-ASCII run."""
    if i >= n:
        return False
    c = buf[i]
    if c >= 0x80:
        return True
    if c == 92 and i + 1 < n and buf[i + 1] == 117:
        cp, _ = _escape(buf, i, n)
        return cp >= 0x80
    return False


def _run_hash(a, lo, m):
    """Hash of a[lo:lo + m] (8 bytes at a time, then byte by byte), never 0 (0 marks an empty
    slot of the run cache)."""
    h = np.uint64(0xCBF29CE484222325) ^ np.uint64(m)
    q = 0
    while q + 8 <= m:
        h = (h ^ _load8(a, lo + q)) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
        q += 8
    while q < m:
        h = (h ^ np.uint64(a[lo + q])) * np.uint64(0x100000001B3)
        q += 1
    h ^= h >> np.uint64(32)
    return h | np.uint64(1)


def _utf8_into(buf, a, b, n, scratch):
    """The UTF-8 of the string content ``buf[a:b]`` (UTF-8 and escapes) into scratch; returns
    its length, -1 if longer than scratch."""
    m = 0
    while a < b:
        if buf[a] == 92:
            cp, a = _escape(buf, a, n)
        else:
            cp, ln = _utf8(buf, a, n)
            a += ln
        if m + 4 > scratch.shape[0]:
            return -1
        if cp < 0x800:
            scratch[m] = 0xC0 | (cp >> 6)
            scratch[m + 1] = 0x80 | (cp & 0x3F)
            m += 2
        elif cp < 0x10000:
            scratch[m] = 0xE0 | (cp >> 12)
            scratch[m + 1] = 0x80 | ((cp >> 6) & 0x3F)
            scratch[m + 2] = 0x80 | (cp & 0x3F)
            m += 3
        else:
            scratch[m] = 0xF0 | (cp >> 18)
            scratch[m + 1] = 0x80 | ((cp >> 12) & 0x3F)
            scratch[m + 2] = 0x80 | ((cp >> 6) & 0x3F)
            scratch[m + 3] = 0x80 | (cp & 0x3F)
            m += 4
    return m


def _lookup_run(src, a, m, out, run_o, keys, meta, pool):
    """The folding of the run ``src[a:a + m]`` (its UTF-8) from the run cache, written at
    out[run_o]: returns the new output position, -1 when the run is not cached, -2 when there
    is no room in ``out``."""
    h = _run_hash(src, a, m)
    mask = np.uint64(keys.shape[0] - 1)
    j = h & mask
    r = -1
    while keys[j] != 0:
        if keys[j] == h and meta[j, 1] == m:
            r = meta[j, 0]
            break
        j = (j + np.uint64(1)) & mask
    if r < 0:
        return -1
    q = 0
    while q + 8 <= m and _load8(pool, r + q) == _load8(src, a + q):
        q += 8
    while q < m and pool[r + q] == src[a + q]:
        q += 1
    if q < m:                     # (a different run with the same hash: not cached)
        return -1
    f = meta[j, 2]
    fn = meta[j, 3]
    if run_o + fn + 64 + F.PAD > out.shape[0]:
        return -2
    for q in range(fn):
        out[run_o + q] = pool[f + q]
    return run_o + fn


def _close_run(src, a, m, out, run_o, runs):
    """A non-ASCII run whose per-character output began at out[run_o] ends and holds a
    character that is not context-free: its folding is taken from the run cache (``runs``:
    :meth:`RunCache.arrays`) by its UTF-8, ``src[a:a + m]``. Returns (new output position,
    found); a run missing from the cache is recorded there (``mbuf``/``miss``, if there is
    room) and its line is then a fallback line."""
    keys, meta, pool, _, mbuf, miss = runs
    r = _lookup_run(src, a, m, out, run_o, keys, meta, pool)
    if r == -1:
        c = miss[0]
        u = miss[1]
        if c + 3 < miss.shape[0] and u + m <= mbuf.shape[0]:
            for q in range(m):
                mbuf[u + q] = src[a + q]
            miss[2 + c] = u
            miss[3 + c] = u + m
            miss[0] = c + 1
            miss[1] = u + m
    return max(r, run_o), r >= 0


def _fold_cp(cp, out, o, ok, off, pool):
    """The table folding of code point ``cp`` (>= 0x80) written at out[o]; returns the new o,
    or -1 when ``cp`` is not context-free (its run is then folded whole, :func:`_close_run`)."""
    if cp >= ok.shape[0] or ok[cp] == 0:
        return -1
    for q in range(off[cp], off[cp + 1]):
        out[o] = pool[q]
        o += 1
    return o


def _fold_utf8(buf, i, n, out, o, ok, off, pool):
    """The UTF-8 characters from i up to the next ASCII byte (or n), folded into out[o:] one by
    one (:func:`_fold_cp`): returns (new i, new o, 1 if all were context-free, 0 if one was
    not, -1 at invalid UTF-8)."""
    plain = 1
    while i < n and buf[i] >= 0x80:
        cp, ln = _utf8(buf, i, n)
        if ln == 0:
            return i, o, -1
        i += ln
        r = _fold_cp(cp, out, o, ok, off, pool)
        if r < 0:
            plain = 0
        else:
            o = r
    return i, o, plain


def _text(buf, i, n, out, o, cls, lower, esc, ok, off, pool, compress, runs):
    """Copy the string content at i into out[o:], unescaped and folded; returns (index after
    the closing quote, new o, UTF-8 length of the unfolded text), index -1 for a fallback.
    ``compress``: take one-character escapes in the vector loop (:func:`_copy64_esc`).
    Non-ASCII characters are folded one by one from the table; a maximal run of them that
    holds one that is not context-free is folded whole from the run cache (``runs``,
    :func:`_close_run`); a run missing there is recorded and makes the line a fallback."""
    adj = -1 - i                  # UTF-8 length = bytes consumed + adj (escapes adjust adj)
    scratch = runs[3]
    run_i = -1                    # input index where the open non-ASCII run starts (-1: none)
    run_o = 0                     # its output position
    run_esc = False               # it holds an escaped character
    cplx = False                  # it holds a character that is not context-free
    lost = False                  # a run of this text is missing from the run cache
    while True:
        if i >= n or buf[i] < 0x80:     # (at a non-ASCII character: straight to it)
            if compress:                # the hot loop: 64 bytes at a time (vector), escapes too
                while i + 64 <= n:
                    r = _copy64_esc(buf, i, out, o)
                    q = np.int64(r & np.uint64(0xFF))
                    o += np.int64((r >> np.uint64(8)) & np.uint64(0xFF))
                    adj -= np.int64(r >> np.uint64(16))
                    if q < 64:
                        i += q
                        break
                    i += 64             # (a constant step: the next load waits for no mask)
            else:                       # the hot loop: plain ASCII, 64 bytes at a time (vector)
                while i + 64 <= n:
                    spec = _copy64(buf, i, out, o)  # bytes from the first special on: rewritten
                    if spec != 0:
                        q = _trailing_zeros(spec)
                        i += q
                        o += q
                        break
                    i += 64
                    o += 64
            while i + 8 <= n:           # the last 63 bytes, 8 at a time (SWAR)
                x = _load8(buf, i)
                xq = x ^ _QUOTES
                xb = x ^ _BACKSLASHES
                # high bit of a byte: '"', '\\', < 0x20 or >= 0x80 (exact for the lowest one)
                spec = (((xq - _ONES) & ~xq) | ((xb - _ONES) & ~xb) | ((x - _SPACES) & ~x)
                        | x) & _HIGH
                up = (x + _ABOVE_A) & ~(x + _ABOVE_Z) & _HIGH      # 'A'..'Z' (below a special)
                _store8(out, o, x | (up >> _TWO))  # bytes from the first special on: rewritten
                if spec != 0:
                    q = _trailing_zeros(spec) >> 3
                    i += q
                    o += q
                    break
                i += 8
                o += 8
            else:
                while i < n:                            # the last bytes, one by one
                    c = buf[i]
                    if cls[c] != 0:
                        break
                    out[o] = lower[c]
                    o += 1
                    i += 1
        if i >= n:
            return -1, o, 0
        c = buf[i]
        k = cls[c]
        if k == 1:
            if lost:
                return -1, o, 0
            return i + 1, o, i + 1 + adj
        if k == 3:
            return -1, o, 0
        if k == 2:
            if i + 1 < n and esc[buf[i + 1]] != 0:   # a one-character escape, folded directly
                out[o] = esc[buf[i + 1]]
                o += 1
                i += 2
                adj -= 1
                continue
            j = i
            cp, i = _escape(buf, i, n)
            if cp < 0:
                return -1, o, 0
            if cp < 0x80:
                out[o] = lower[cp]
                o += 1
                adj -= i - j - 1
                continue
            adj -= i - j - (2 if cp < 0x800 else (3 if cp < 0x10000 else 4))
            if run_i < 0:               # an escaped non-ASCII character
                run_i = j
                run_o = o
            run_esc = True
            r = _fold_cp(cp, out, o, ok, off, pool)
            if r < 0:
                cplx = True             # (the run is folded whole when it ends)
            else:
                o = r
        else:                           # UTF-8: the characters up to the next ASCII byte
            if run_i < 0:
                run_i = i
                run_o = o
            i, o, plain = _fold_utf8(buf, i, n, out, o, ok, off, pool)
            if plain < 0:
                return -1, o, 0
            if plain == 0:
                cplx = True
        if i >= n or (buf[i] < 0x80 and (buf[i] != 92 or not _run_goes_on(buf, i, n))):
            # the run ends (the test of a \u escape is out of line: rare)
            if cplx:
                if run_esc:             # its UTF-8, unescaped
                    src = scratch
                    a = 0
                    m = _utf8_into(buf, run_i, i, n, scratch)
                else:                   # its UTF-8: the input bytes
                    src = buf
                    a = run_i
                    m = i - run_i
                if m < 0:
                    o = run_o
                    lost = True
                else:
                    o, found = _close_run(src, a, m, out, run_o, runs)
                    lost = lost or not found
            run_i = -1
            run_esc = False
            cplx = False
            if i + 1 < n and buf[i] == 32 and buf[i + 1] >= 0x80:
                out[o] = 32             # one space between two runs (words of a non-Latin
                o += 1                  # script): here, not through the copy loops
                i += 1


def _key_is(buf, a, b, key):
    if b - a != key.shape[0]:
        return False
    for q in range(b - a):
        if buf[a + q] != key[q]:
            return False
    return True


def _object(buf, i, n, key_text, key_id, has_id, cls, lower, esc, ok, off, pool, stack, out,
            o, res, hw, kw, compress, runs):
    """One line's object at i: res = [end, doc lo, doc hi, raw length, id lo, id hi, first
    word, end word]; returns the new output position and word count (both unchanged for a
    fallback, with res[0] = -1)."""
    res[0] = -1
    o0 = o
    k0 = kw
    i = _ws(buf, i, n)
    if i >= n or buf[i] != 123:
        return o0, k0
    i = _ws(buf, i + 1, n)
    seen_t = False
    seen_i = False
    while True:
        if i >= n or buf[i] != 34:
            return o0, k0
        ks = i + 1
        i = _plain_string(buf, ks, n, cls)          # key: no escapes
        if i < 0:
            return o0, k0
        ke = i
        i = _ws(buf, i + 1, n)
        if i >= n or buf[i] != 58:
            return o0, k0
        i = _ws(buf, i + 1, n)
        if i >= n:
            return o0, k0
        if _key_is(buf, ks, ke, key_text):
            if seen_t or buf[i] != 34:
                return o0, k0
            seen_t = True
            if o > 0:
                out[o] = 10
                o += 1
            res[1] = o
            res[6] = kw
            i, o, raw = _text(buf, i + 1, n, out, o, cls, lower, esc, ok, off, pool, compress,
                              runs)
            if i < 0:
                return o0, k0
            kw = F._word_hashes(out, res[1], o, hw, kw)   # while its bytes are in cache
            res[2] = o
            res[3] = raw
            res[7] = kw
        elif has_id and _key_is(buf, ks, ke, key_id):
            if seen_i:
                return o0, k0
            seen_i = True
            c = buf[i]
            if c == 34:
                a = i + 1
                i = _plain_string(buf, a, n, cls)   # no escapes
                if i < 0:
                    return o0, k0
                res[4] = a
                res[5] = i
                i += 1
            elif c == 45 or 48 <= c <= 57:
                a = i
                j = _number(buf, i, n)
                if j < 0:
                    return o0, k0
                digits = j - a - (1 if c == 45 else 0)
                for q in range(a, j):               # integer literals only
                    if buf[q] == 46 or buf[q] == 101 or buf[q] == 69:
                        return o0, k0
                if digits > 18 or (c == 45 and buf[a + 1] == 48):
                    return o0, k0  # (str(int('-0')) == '0')
                res[4] = a
                res[5] = j
                i = j
            else:
                return o0, k0
        else:
            i = _skip_value(buf, i, n, cls, stack)
            if i < 0:
                return o0, k0
        i = _ws(buf, i, n)
        if i >= n:
            return o0, k0
        c = buf[i]
        if c == 44:
            i = _ws(buf, i + 1, n)
            continue
        if c == 125:
            i += 1
            break
        return o0, k0
    i = _ws(buf, i, n)
    if (i < n and buf[i] != 10) or not seen_t or (has_id and not seen_i):
        return o0, k0
    res[0] = i
    return o, kw


def _extract(buf, key_text, key_id, has_id, cls, lower, esc, blank, ok, off, pool, out, ls, st,
             dlo, dhi, draw, ilo, ihi, stack, res, hw, wlo, whi, compress, runs):
    """All lines of ``buf`` (whole lines; the last one may lack its newline): per line its
    start ``ls`` (plus ``ls[lines] = len(buf)``), status ``st`` (0 document, 1 blank,
    2 fallback), document range in ``out``, UTF-8 length of the text, id span and range of its
    word hashes in ``hw`` (``wlo``, ``whi``). Returns (lines, bytes used in out, words in hw);
    lines = -1 if ``buf`` has more lines than the line arrays have room for (``ls`` holds
    lines + 1). ``stack`` (``MAX_DEPTH`` bytes) and ``res`` (8 int64) are scratch."""
    n = buf.shape[0]
    cap = ls.shape[0] - 1
    p = 0
    nl = 0
    o = 0
    k = 0
    while p < n:
        if nl >= cap:
            return -1, o, k
        ls[nl] = p
        j = p
        while j < n and blank[buf[j]] != 0:
            j += 1
        if j >= n or buf[j] == 10:
            st[nl] = 1
            p = j + 1
            nl += 1
            continue
        o, k = _object(buf, p, n, key_text, key_id, has_id, cls, lower, esc, ok, off, pool, stack,
                       out, o, res, hw, k, compress, runs)
        e = res[0]
        if e >= 0:
            st[nl] = 0
            dlo[nl] = res[1]
            dhi[nl] = res[2]
            draw[nl] = res[3]
            ilo[nl] = res[4]
            ihi[nl] = res[5]
            wlo[nl] = res[6]
            whi[nl] = res[7]
        else:
            st[nl] = 2
            e = j
            while e < n and buf[e] != 10:
                e += 1
        p = e + 1
        nl += 1
    ls[nl] = n
    return nl, o, k


_JIT = ("_ws", "_utf8", "_hex4", "_escape", "_skip_string", "_plain_string", "_number", "_literal",
        "_member_key", "_skip_value", "_run_goes_on", "_run_hash", "_utf8_into", "_lookup_run",
        "_close_run", "_fold_cp", "_fold_utf8", "_text", "_key_is", "_object", "_extract")
if numba is not None:
    for _name in _JIT:
        # (the run lookup and UTF-8 decoding inlined where they are used, measured)
        globals()[_name] = F.jit(globals()[_name], _name in (
            "_lookup_run", "_close_run", "_run_hash", "_utf8", "_fold_cp", "_fold_utf8"))
_STATE: dict[str, bool] = {}


# -- the run cache ---------------------------------------------------------------------------

class RunCache:
    """Foldings of whole non-ASCII runs that hold a character that is not context-free (say a
    Devanagari word with its vowel signs), for the kernel (:func:`_close_run`): an open-addressing
    table of hashes of the runs' UTF-8 (``keys``; 0: empty; half full at most), and per slot
    (``meta``) the offset and length of the run's UTF-8 and of its folding
    (:func:`.hashing.fold_run_uncached`, exactly what ``normalise_bytes`` gives the run) in one
    byte pool. One per process, shared by all batches; it stops growing at ``MAX_RUNS`` runs
    (later missing runs send their lines to the Python path). The kernel records the runs it
    misses in ``mbuf``/``miss`` (:meth:`take_missed`)."""

    MAX_RUNS = 1 << 20

    def __init__(self, slots: int = 1 << 12):
        self.n = 0
        self.keys = np.zeros(slots, dtype=np.uint64)
        self.meta = np.zeros((slots, 4), dtype=np.int64)
        self.pool = np.zeros(1 << 16, dtype=np.uint8)
        self.used = 0
        self.scratch = np.zeros(1 << 12, dtype=np.uint8)   # the longest escaped run folded
        self.mbuf = np.zeros(1 << 20, dtype=np.uint8)       # runs the kernel missed
        self.miss = np.zeros(2 + (1 << 14), dtype=np.int64)  # count, bytes, offsets

    def arrays(self) -> tuple:
        return self.keys, self.meta, self.pool, self.scratch, self.mbuf, self.miss

    def learn(self) -> bool:
        """Fold and cache the runs the kernel missed since the last call; True if there were
        any (their lines are then worth extracting again)."""
        missed = self.take_missed()
        for run in set(missed):
            self.add(run)
        return bool(missed)

    def take_missed(self) -> list[bytes]:
        """The runs the kernel recorded as missing since the last call (then forgotten)."""
        c = int(self.miss[0])
        lo = self.miss[2:3 + c].tolist()
        self.miss[:2] = 0
        return [self.mbuf[lo[q]:lo[q + 1]].tobytes() for q in range(c)]

    def add(self, raw: bytes) -> bool:
        """Cache the folding of run ``raw``; False when the cache is full."""
        if self.n >= self.MAX_RUNS:
            return False
        h = int(_run_hash(np.frombuffer(raw, dtype=np.uint8), 0, len(raw)))
        if self._find(h, raw) >= 0:
            return True
        if 2 * (self.n + 1) > len(self.keys):
            self._grow()
        fold = H.fold_run_uncached(raw)
        j = self._slot(h)
        self.keys[j] = h
        self.meta[j] = (self._put(raw), len(raw), self._put(fold), len(fold))
        self.n += 1
        return True

    def _slot(self, h: int) -> int:
        mask = len(self.keys) - 1
        j = h & mask
        while self.keys[j] != 0:
            j = (j + 1) & mask
        return j

    def _find(self, h: int, raw: bytes) -> int:
        mask = len(self.keys) - 1
        j = h & mask
        while self.keys[j] != 0:
            a, m = int(self.meta[j, 0]), int(self.meta[j, 1])
            if int(self.keys[j]) == h and m == len(raw) and self.pool[a:a + m].tobytes() == raw:
                return j
            j = (j + 1) & mask
        return -1

    def _put(self, data: bytes) -> int:
        if self.used + len(data) > len(self.pool):
            self.pool = np.concatenate((self.pool, np.zeros(max(len(self.pool), len(data)),
                                                            np.uint8)))
        at = self.used
        self.pool[at:at + len(data)] = np.frombuffer(data, dtype=np.uint8)
        self.used += len(data)
        return at

    def _grow(self) -> None:
        keys, meta = self.keys, self.meta
        self.keys = np.zeros(2 * len(keys), dtype=np.uint64)
        self.meta = np.zeros((2 * len(keys), 4), dtype=np.int64)
        for j in np.flatnonzero(keys).tolist():
            k = self._slot(int(keys[j]))
            self.keys[k] = keys[j]
            self.meta[k] = meta[j]


_RUNS: list[RunCache] = []


def run_cache() -> RunCache:
    """This process's run cache."""
    if not _RUNS:
        _RUNS.append(RunCache())
    return _RUNS[0]


# -- the reader ------------------------------------------------------------------------------

def _chunks(path: str, start: int, end: int, block: int,
            buffers: int = 1) -> Iterator[tuple[int, bytearray, int]]:
    """(file offset, buffer, n) blocks: ``buffer[:n]`` holds the whole lines that start in
    [start, end) (end -1: to the end of the file), as :func:`.corpus._lines` delimits them.
    Buffers are reused in turn (read into; the rest of a cut line copied to the front of the
    next), so a block must be used before ``buffers - 1`` more are asked for."""
    with C.open_binary(path) as fh:
        pos = 0
        if start > 0:
            fh.seek(start - 1)
            pos = start - 1 + len(fh.readline())   # finish the line that straddles the cut
        ring = [bytearray(block + (1 << 16)) for _ in range(buffers)]
        turn = 0
        buf = ring[0]
        filled = 0                                 # bytes in buf: carried over, then read
        while end < 0 or pos < end:
            if filled + block > len(buf):          # a line longer than the block: grow
                new = bytearray(max(2 * len(buf), filled + block))
                new[:filled] = buf[:filled]
                buf = ring[turn] = new
            with memoryview(buf) as mv:
                got = fh.readinto(mv[filled:filled + block])
            filled += got
            if got:
                cut = buf.rfind(b"\n", 0, filled) + 1
                if cut == 0:
                    continue                       # no line end yet: read on
            else:
                cut = filled                       # the last line, without a newline
                if not cut:
                    return
            if end >= 0 and pos + cut > end:       # stop after the line holding byte end - 1
                j = buf.find(b"\n", end - 1 - pos, cut)
                yield pos, buf, cut if j < 0 else j + 1
                return
            yield pos, buf, cut
            pos += cut
            if not got:
                return
            turn = (turn + 1) % buffers
            nxt = ring[turn]
            rest = filled - cut
            if len(nxt) < rest + block:
                nxt = ring[turn] = bytearray(max(len(nxt), rest + block))
            nxt[:rest] = buf[cut:filled]           # the rest of the cut line, to the front
            buf = nxt
            filled = rest


def _chunks_ahead(path: str, start: int, end: int,
                  block: int) -> Iterator[tuple[int, bytearray, int]]:
    """:func:`_chunks` with reading and decompression in a second thread, one block ahead of
    the caller: while the caller works on one block (the kernels release the GIL) the thread
    fills the next, so a job takes about the longer of the two times rather than their sum.
    Errors are raised in the caller where the blocks before them end; a caller that stops early
    stops the thread."""
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        # 3 buffers: one the caller holds, one in the queue, one being filled
        blocks = _chunks(path, start, end, block, buffers=3)
        try:
            for item in blocks:
                if not put(("block", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            put(("error", exc))
        finally:
            blocks.close()                      # (closes the file now, not when collected)

    t = threading.Thread(target=produce, name=f"read {os.path.basename(path)}", daemon=True)
    t.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        t.join()


@dataclass
class Batch:
    """The documents of one block. ``buf[lo[d]:hi[d]]`` is document d, folded; ``buf`` is reused
    by the next batch, so a batch must be used before the iterator advances."""
    buf: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    nbytes: int                       # UTF-8 bytes of the documents' text (before folding)
    seconds: float                    # CPU time of extraction and fallback parsing
    doc_id: Callable[[int], str]
    fallbacks: int                    # lines parsed by the Python fallback
    hw: np.ndarray                    # word hashes (spread to 64 bits) of the documents:
    wlo: np.ndarray                   # document d's are hw[wlo[d]:whi[d]] (reused likewise)
    whi: np.ndarray

    def doc_bytes(self, d: int) -> bytes:
        return self.buf[self.lo[d]:self.hi[d]].tobytes()


class _Arrays:
    def __init__(self):
        self.n = 0
        self.lines = 0
        self.res = np.zeros(8, dtype=np.int64)      # (kernel scratch: one line's results,
        self.stack = np.empty(MAX_DEPTH, dtype=np.uint8)    # and the nesting of its JSON)

    def ensure(self, nbytes: int, lines: int, expand: int) -> None:
        if lines > self.lines:
            self.lines = max(lines, 2 * self.lines)
            m = self.lines + 1
            self.ls = np.empty(m, dtype=np.int64)
            self.st = np.empty(m, dtype=np.uint8)
            self.dlo, self.dhi, self.draw, self.ilo, self.ihi, self.wlo, self.whi = (
                np.zeros(m, dtype=np.int64) for _ in range(7))
        if nbytes > self.n:
            self.n = max(nbytes, 2 * self.n)
            # (pages are used on touch; pass 1 reads up to PAD bytes past a document)
            self.out = np.empty(self.n * expand + 64 + F.PAD, dtype=np.uint8)
        # a document of b output bytes has at most (b + 1) // 2 words
        if len(getattr(self, "hw", ())) < len(self.out) // 2 + self.lines + 2:
            self.hw = np.empty(len(self.out) // 2 + self.lines + 2, dtype=np.uint64)


def iter_batches(piece, text_field: str = "text", id_field: str | None = None,
                 block: int = BLOCK, read_ahead: bool = False) -> Iterator[Batch]:
    """Batches of one JSON-lines shard piece ``(path, start, end)``; documents, ids, text bytes
    and errors exactly as :func:`.corpus.iter_documents` gives them. ``read_ahead``: read and
    decompress in a second thread (:func:`_chunks_ahead`)."""
    path, start, end = piece
    T = tables()
    key_text = np.frombuffer(text_field.encode("utf-8"), dtype=np.uint8)
    key_id = np.frombuffer((id_field or "").encode("utf-8"), dtype=np.uint8)
    A = _Arrays()
    B = _Arrays()                                   # (lines extracted again)
    R = run_cache()
    lineno: int | None = 0 if start <= 0 else None
    chunks = _chunks_ahead if read_ahead else _chunks
    for base, chunk, size in chunks(path, start, end, block):
        t0 = time.process_time()
        arr = np.frombuffer(chunk, dtype=np.uint8, count=size)
        A.ensure(size, 1024, T.max_expand)          # lines: as many as last time, at first
        while True:
            nl, used, nw = _extract(arr, key_text, key_id, bool(id_field), _CLS, _LOWER, _ESC,
                                    _BLANK, T.ok, T.off, T.pool, A.out, A.ls, A.st, A.dlo, A.dhi,
                                    A.draw, A.ilo, A.ihi, A.stack, A.res, A.hw, A.wlo, A.whi,
                                    _COMPRESS, R.arrays())
            if nl >= 0:
                break
            A.ensure(size, chunk.count(b"\n", 0, size) + 1, T.max_expand)   # more lines: again
        st = A.st[:nl]
        lines = np.flatnonzero(st != 1)
        lo, hi = A.dlo[lines], A.dhi[lines]
        wlo, whi = A.wlo[lines], A.whi[lines]
        nbytes = int(A.draw[:nl][st == 0].sum())
        out = A.out
        hw = A.hw
        fb_ids: dict[int, str] = {}
        fb = np.flatnonzero(st == 2)
        again = {}
        if R.learn() and len(fb):      # runs the cache lacked: folded now, extract again
            again = _extract_again(chunk, A.ls, fb, B, key_text, key_id, id_field, T, R)
        if len(fb):
            where = np.searchsorted(lines, fb)
            keep = np.ones(len(lines), dtype=bool)
            for li, k in zip(fb.tolist(), where.tolist()):
                if li in again:
                    folded, raw, did = again[li]
                    if did is not None:
                        fb_ids[li] = did
                    nbytes += raw
                    out, used, hw, nw = append_doc(folded, out, used, hw, nw, k, lo, hi, wlo, whi)
                    continue
                a, b = int(A.ls[li]), int(A.ls[li + 1])
                doc = C.parse_line(path, base + a, None if lineno is None else lineno + li + 1,
                                   bytes(chunk[a:b]), text_field, id_field)
                if doc is None:                    # (blank by bytes.strip; the kernel agrees)
                    keep[k] = False
                    continue
                fb_ids[li] = doc[0]
                nbytes += len(doc[1])
                out, used, hw, nw = append_folded(doc[1], out, used, hw, nw, k, lo, hi, wlo, whi)
            lines, lo, hi = lines[keep], lo[keep], hi[keep]
            wlo, whi = wlo[keep], whi[keep]
        ls = A.ls[lines]
        if id_field:
            ilo, ihi = A.ilo[lines], A.ihi[lines]

            def doc_id(d, lines=lines, ilo=ilo, ihi=ihi, chunk=chunk, fb_ids=fb_ids):
                li = int(lines[d])
                if li in fb_ids:
                    return fb_ids[li]
                return chunk[ilo[d]:ihi[d]].decode("utf-8")
        elif lineno is not None:
            def doc_id(d, lines=lines, first=lineno + 1):
                return f"{path}:{first + int(lines[d])}"
        else:
            def doc_id(d, ls=ls, base=base):
                return f"{path}@{base + int(ls[d])}"
        seconds = time.process_time() - t0
        yield Batch(out[:used], lo, hi, nbytes, seconds, doc_id, len(fb) - len(again), hw[:nw],
                    wlo, whi)
        if lineno is not None:
            lineno += nl


def _extract_again(chunk, ls, fb, B, key_text, key_id, id_field, T, R) -> dict:
    """The fallback lines ``fb`` of a block extracted again (after the runs they missed were
    added to the run cache): {line: (folded text, UTF-8 length, id or None)} for those that
    now pass; the others stay fallback lines."""
    spans = [(int(ls[li]), int(ls[li + 1])) for li in fb.tolist()]
    sub = b"".join(bytes(chunk[a:b]) if chunk[b - 1:b] == b"\n" else bytes(chunk[a:b]) + b"\n"
                   for a, b in spans)
    arr = np.frombuffer(bytearray(sub), dtype=np.uint8)   # (writable, as blocks are: the
    B.ensure(len(sub), len(spans) + 1, T.max_expand)      # kernel compiled once, not twice)
    nl, _, _ = _extract(arr, key_text, key_id, bool(id_field), _CLS, _LOWER, _ESC, _BLANK, T.ok,
                        T.off, T.pool, B.out, B.ls, B.st, B.dlo, B.dhi, B.draw, B.ilo, B.ihi,
                        B.stack, B.res, B.hw, B.wlo, B.whi, _COMPRESS, R.arrays())
    R.take_missed()                 # (still missing: the cache is full; Python folds them)
    got = {}
    if nl != len(spans):            # (cannot happen: one line per span)
        return got
    for j, li in enumerate(fb.tolist()):
        if B.st[j] == 0:
            did = sub[B.ilo[j]:B.ihi[j]].decode("utf-8") if id_field else None
            got[li] = (B.out[B.dlo[j]:B.dhi[j]].tobytes(), int(B.draw[j]), did)
    return got


def append_folded(text: bytes, out, used, hw, nw, d, lo, hi, wlo, whi):
    """Append document d, folded in Python (:func:`.hashing.normalise_bytes`), to a batch's
    output buffer: :func:`append_doc`."""
    return append_doc(H.normalise_bytes(text), out, used, hw, nw, d, lo, hi, wlo, whi)


def append_doc(folded: bytes, out, used, hw, nw, d, lo, hi, wlo, whi):
    """Append document d, folded already, to a batch's output buffer after a newline, and its
    word hashes to ``hw``; record its ranges in lo/hi/wlo/whi[d]. Buffers grow when needed
    (keeping ``F.PAD`` bytes of room); returns (out, used, hw, nw)."""
    t = b"\n" + folded
    if used + len(t) + F.PAD > len(out):
        out = np.concatenate((out[:used], np.zeros(len(t) + len(out) + F.PAD, np.uint8)))
    out[used:used + len(t)] = np.frombuffer(t, dtype=np.uint8)
    lo[d], hi[d] = used + 1, used + len(t)
    used += len(t)
    if nw + len(t) // 2 + 2 > len(hw):              # (at most (len + 1) // 2 words)
        hw = np.concatenate((hw[:nw], np.empty(len(t) + len(hw), np.uint64)))
    wlo[d], whi[d] = nw, _hash_words(out, used - len(t) + 1, used, hw, nw)
    return out, used, hw, int(whi[d])


def _hash_words(out, lo, hi, hw, k):
    """Word hashes of ``out[lo:hi]`` into hw[k:] (a fallback document: as the kernel hashes the
    documents it copies); returns the new k."""
    return F._word_hashes(out, lo, hi, hw, k)


def available() -> bool:
    """True when the extraction kernel compiles and runs (numba present, not disabled)."""
    if numba is None or os.environ.get("CSBENCH_NUMBA", "1").strip().lower() in (
            "0", "false", "no", "off"):
        return False
    if sys.byteorder != "little":       # the 8-byte copy reads bytes in little-endian order
        return False
    if "ok" not in _STATE:
        ok = False
        try:
            A = _Arrays()
            A.ensure(64, 4, 4)
            T = tables()
            buf = np.frombuffer(b'{"text": "A\\u00e9", "n": [1, {"x": null}]}\n\n', np.uint8)
            nl, used, nw = _extract(buf, np.frombuffer(b"text", np.uint8), np.zeros(0, np.uint8),
                                    False, _CLS, _LOWER, _ESC, _BLANK, T.ok, T.off, T.pool, A.out,
                                    A.ls, A.st, A.dlo, A.dhi, A.draw, A.ilo, A.ihi,
                                    A.stack, A.res, A.hw, A.wlo, A.whi,
                                    _COMPRESS, RunCache(16).arrays())
            ok = (nl == 2 and A.out[:used].tobytes() == "aé".encode()
                  and A.hw[:nw].tolist() == H.tokenise("aé".encode())[2].tolist())
        except Exception as exc:  # noqa: BLE001 - fall back on any compile/run failure
            log.warning("numba JSON-lines kernel unavailable (%s); using the per-document path",
                        exc)
        _STATE["ok"] = ok
    return _STATE["ok"]
