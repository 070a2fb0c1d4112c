"""The text copy of the fused readers, in numba kernels: a JSON string's content copied into the
output buffer unescaped and **folded while copying** exactly as :func:`.hashing.normalise_bytes`
folds it (:func:`_text`). Plain ASCII goes 64 bytes at a time (:func:`_copy64`: one vector load,
compares that find the first quote, backslash, control or non-ASCII byte, upper case folded, one
store); on CPUs with a byte compress (AVX-512 VBMI2, :func:`_has_compress`) the one-character
escapes other than ``\\\\`` are taken inside that loop too (:func:`_copy64_esc`); the last bytes go
8 at a time (SWAR) and then one by one. Non-ASCII characters are folded one by one from the
per-code-point table (:func:`_fold_utf8`, :mod:`.folding`); a run that holds a character that is
not context-free is folded whole from the run cache (:func:`_close_run`, :mod:`.runs`)."""
from __future__ import annotations

import numpy as np

from . import simd as S
from .jit import cpu_has, jit, numba
from .json_syntax import _CLS, _LOWER, _escape, _utf8
from .ngram import PAD
from .simd import _load8, _trailing_zeros

# SWAR constants of the ASCII copy (8 bytes in a uint64)
_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x22) * _ONES
_BACKSLASHES = np.uint64(0x5C) * _ONES
_SPACES = np.uint64(0x20) * _ONES
_ABOVE_A = np.uint64(0x80 - 0x41) * _ONES       # high bit set: byte >= 'A' (bytes < 0x80)
_ABOVE_Z = np.uint64(0x80 - 0x5B) * _ONES       # high bit set: byte > 'Z'
_TWO = np.uint64(2)


def _has_compress() -> bool:
    """True when this CPU compresses bytes in one instruction (AVX-512 VBMI2); elsewhere
    LLVM would compress byte by byte, so escapes take the scalar path instead."""
    return cpu_has("avx512vbmi2")


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
            splat = S._ir_splat
            x = builder.load(S._ir_ptr(context, builder, sig, args, 0), align=1)
            spec = builder.or_(
                builder.or_(builder.icmp_unsigned("==", x, splat(0x22)),
                            builder.icmp_unsigned("==", x, splat(0x5C))),
                builder.or_(builder.icmp_unsigned("<", x, splat(0x20)),
                            builder.icmp_signed("<", x, splat(0))))
            builder.store(S._ir_lower(builder, x), S._ir_ptr(context, builder, sig, args, 2),
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
            vt, mt = S._V64, _ir.VectorType(i1, 64)
            splat = S._ir_splat

            def eq(v):
                return builder.icmp_unsigned("==", x, splat(v))

            def bits(m):
                return builder.bitcast(m, i64)
            x = builder.load(S._ir_ptr(context, builder, sig, args, 0), align=1)
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
            y = S._ir_lower(builder, x)
            r = x
            for c, v in ((0x6E, 10), (0x74, 9), (0x72, 13), (0x62, 8), (0x66, 12)):
                r = builder.select(eq(c), splat(v), r)
            y = builder.select(builder.bitcast(escaped, mt), r, y)
            fn = S._ir_fn(builder, "llvm.experimental.vector.compress.v64i8", vt, [vt, mt, vt])
            z = builder.call(fn, [y, builder.bitcast(keep, mt), _ir.Constant(vt, None)])
            builder.store(z, S._ir_ptr(context, builder, sig, args, 2), align=1)
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
    if run_o + fn + 64 + PAD > out.shape[0]:
        return -2
    for q in range(fn):
        out[run_o + q] = pool[f + q]
    return run_o + fn


def _close_run(src, a, m, out, run_o, runs):
    """A non-ASCII run whose per-character output began at out[run_o] ends and holds a
    character that is not context-free: its folding is taken from the run cache (``runs``:
    :meth:`.runs.RunCache.arrays`) by its UTF-8, ``src[a:a + m]``. Returns (new output position,
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


if numba is not None:
    # (the run lookup and UTF-8 decoding inlined where they are used, measured)
    _run_goes_on = jit(_run_goes_on)
    _run_hash = jit(_run_hash, inline=True)
    _utf8_into = jit(_utf8_into)
    _lookup_run = jit(_lookup_run, inline=True)
    _close_run = jit(_close_run, inline=True)
    _fold_cp = jit(_fold_cp, inline=True)
    _fold_utf8 = jit(_fold_utf8, inline=True)
    _text = jit(_text)
