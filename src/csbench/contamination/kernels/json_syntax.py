"""The JSON grammar as the fused JSON-lines reader checks it, in numba kernels: whitespace, UTF-8,
``\\uXXXX`` and one-character escapes, strings, numbers, literals and nested values up to
``MAX_DEPTH`` (:func:`_skip_value`), plus the byte tables the text copy reads (:data:`_CLS`,
:data:`_LOWER`, :data:`_ESC`, :data:`_BLANK`). A value the kernels do not take exactly makes its
line a fallback line (:mod:`.jsonl`)."""
from __future__ import annotations

import numpy as np

from .jit import jit, numba

MAX_DEPTH = 256            # nesting depth the validator follows (deeper: fallback)

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


if numba is not None:
    _ws = jit(_ws)
    _utf8 = jit(_utf8, inline=True)     # (UTF-8 decoding inlined where it is used, measured)
    _hex4 = jit(_hex4)
    _escape = jit(_escape)
    _skip_string = jit(_skip_string)
    _plain_string = jit(_plain_string)
    _number = jit(_number)
    _literal = jit(_literal)
    _member_key = jit(_member_key)
    _skip_value = jit(_skip_value)
