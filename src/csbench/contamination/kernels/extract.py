"""The extraction kernel of the fused JSON-lines reader (:func:`_extract`): per line of a block,
blank lines skipped, the line validated as one JSON object (:mod:`.json_syntax`), the value of the
text key copied, unescaped and folded (:func:`.json_text._text`), into one output buffer, the
span of the id value recorded, and the document's words hashed right away while its bytes are
in cache (:func:`.ngram._word_hashes`, the scan kernel's own pass 1). A line it does not take
exactly gets status 2 (fallback, :mod:`.jsonl`)."""
from __future__ import annotations

from . import ngram as F
from .jit import jit, numba
from .json_syntax import _number, _plain_string, _skip_value, _ws
from .json_text import _text


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


if numba is not None:
    _key_is = jit(_key_is)
    _object = jit(_object)
    _extract = jit(_extract)
