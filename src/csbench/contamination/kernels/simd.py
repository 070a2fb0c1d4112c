"""The vector building blocks of the scan kernels, written as LLVM IR (numba intrinsics): 8- and
64-byte loads, the word-byte mask of a 64-byte block (:func:`_word_bits64`) and the 16-words-at-
a-time hashing of the vector pass 1 (:func:`_hash_lanes`, :data:`VECTOR`), plus the IR helpers
the text copies of :mod:`.json_text` and :mod:`.columnar` are made of. Without numba, slow
Python stand-ins keep the modules importable (the kernels then never run)."""
from __future__ import annotations

import numpy as np

from .. import hashing as H
from .jit import cpu_has, numba

LANES = 16                   # words the vector pass 1 hashes per step (16 fit most blocks)
# pass 1 by vectors (compress + byte permutes) where the CPU has both (AVX-512 VBMI and VBMI2)
VECTOR = cpu_has("avx512vbmi", "avx512vbmi2")
_K_FIRST, _K_LAST, _K_LEN, _SPREAD = H.K_FIRST, H.K_LAST, H.K_LEN, H.P_SPREAD

if numba is not None:
    from llvmlite import ir as _ir
    from numba.core import types as _types
    from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros
    from numba.extending import intrinsic as _intrinsic

    _V64 = _ir.VectorType(_ir.IntType(8), 64)      # 64 bytes in one vector register

    def _ir_ptr(context, builder, sig, args, k, vector=True):
        """Pointer to ``arr[idx]`` for an intrinsic whose args k, k + 1 are (arr, idx): a
        64-byte vector pointer, or the byte pointer (``vector=False``)."""
        ary = context.make_array(sig.args[k])(context, builder, args[k])
        ptr = builder.gep(ary.data, [args[k + 1]])
        return builder.bitcast(ptr, _V64.as_pointer()) if vector else ptr

    def _ir_splat(v):
        """The 64-byte vector constant with every byte v."""
        return _ir.Constant(_V64, [_ir.Constant(_ir.IntType(8), v)] * 64)

    def _ir_lower(builder, x):
        """x (64 bytes) with 'A'..'Z' lower-cased."""
        up = builder.icmp_unsigned("<", builder.sub(x, _ir_splat(0x41)), _ir_splat(26))
        return builder.add(x, builder.select(up, _ir_splat(0x20), _ir_splat(0)))

    @_intrinsic
    def _load8(typingctx, arr, idx):
        """The 8 bytes at arr[idx:idx + 8] as a little-endian uint64 (unaligned; no checks)."""
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), _ir.IntType(64).as_pointer())
            return builder.load(ptr, align=1)
        return _types.uint64(arr, idx), codegen

    @_intrinsic
    def _word_bits64(typingctx, arr, idx):
        """Bit i set when byte arr[idx + i] (i < 64) is a word byte (a-z, 0-9, >= 0x80): one
        64-byte vector load and three vector compares (unaligned; no checks)."""
        def codegen(context, builder, sig, args):
            x = builder.load(_ir_ptr(context, builder, sig, args, 0), align=1)
            splat = _ir_splat
            alpha = builder.icmp_unsigned("<", builder.sub(x, splat(0x61)), splat(26))
            digit = builder.icmp_unsigned("<", builder.sub(x, splat(0x30)), splat(10))
            high = builder.icmp_signed("<", x, splat(0))
            return builder.bitcast(builder.or_(builder.or_(alpha, digit), high), _ir.IntType(64))
        return _types.uint64(arr, idx), codegen

    def _ir_fn(builder, name, ret, args):
        """The module's declaration of the LLVM function ``name`` (declared on first use)."""
        fn = builder.module.globals.get(name)
        if fn is None:
            fn = _ir.Function(builder.module, _ir.FunctionType(ret, args), name)
        return fn

    def _make_hash_lanes(permute: bool):
        """The intrinsic ``_hash_lanes(buf, base, s, e, hw, k)`` of the vector pass 1: the words
        of the 64-byte block at ``buf[base:]`` whose starts are the set bits of ``s`` and whose
        ends are those of ``e`` (the i-th start pairs with the i-th end; both inside the block)
        are hashed as :func:`.ngram._word_hash` does, the first ``LANES`` of them to ``hw[k:]`` (a
        masked store: nothing past the last word is written). Returns popcount(e).

        The bit positions are compressed into byte vectors (``llvm.experimental.vector.compress``;
        one instruction with AVX-512 VBMI2). With ``permute`` (AVX-512 VBMI) each word's first and
        last 8 bytes are then picked out of the block and the next 64 bytes by two-table byte
        permutes, 8 words per permute: no memory access per word. Otherwise (any other CPU, where
        this code is compiled but the scalar pass runs) by gathers. Reads up to 128 bytes from
        ``base``."""
        def hash_lanes(typingctx, buf, base, s, e, hw, k):
            def codegen(context, builder, sig, args):
                i1, i32, i64 = _ir.IntType(1), _ir.IntType(32), _ir.IntType(64)
                vec, vt = _ir.VectorType, _V64
                vl, m8 = vec(i64, 8), vec(i1, 8)

                def const(values, t=vl):
                    return _ir.Constant(t, list(values))

                def splat(v):
                    return const([v] * 8)
                undef = _ir.Constant(vl, _ir.Undefined)
                zero = _ir.Constant(vt, None)
                iota = const(range(64), vt)
                compress = _ir_fn(builder, "llvm.experimental.vector.compress.v64i8", vt,
                                  [vt, vec(i1, 64), vt])
                cs = builder.call(compress, [iota, builder.bitcast(args[2], vec(i1, 64)), zero])
                ce = builder.call(compress, [iota, builder.bitcast(args[3], vec(i1, 64)), zero])
                ary = context.make_array(sig.args[0])(context, builder, args[0])
                p = builder.gep(ary.data, [args[1]])
                c = builder.ctpop(args[3])
                cv = builder.shuffle_vector(builder.insert_element(undef, c, _ir.Constant(i32, 0)),
                                            undef, const([0] * 8, vec(i32, 8)))
                if permute:
                    x0 = builder.load(builder.bitcast(p, vt.as_pointer()), align=1)
                    x1 = builder.load(builder.bitcast(builder.gep(p, [_ir.Constant(i64, 64)]),
                                                      vt.as_pointer()), align=1)
                    perm = _ir_fn(builder, "llvm.x86.avx512.vpermi2var.qi.512", vt, [vt, vt, vt])
                else:
                    base = builder.ptrtoint(p, i64)
                    base = builder.shuffle_vector(builder.insert_element(
                        undef, base, _ir.Constant(i32, 0)), undef, const([0] * 8, vec(i32, 8)))
                    pv = vec(i64.as_pointer(), 8)
                    gather = _ir_fn(builder, "llvm.masked.gather.v8i64.v8p0", vl,
                                    [pv, i32, m8, vl])
                hary = context.make_array(sig.args[4])(context, builder, args[4])
                store = _ir_fn(builder, "llvm.masked.store.v8i64.p0", _ir.VoidType(),
                               [vl, vl.as_pointer(), i32, m8])
                for q in range(0, LANES, 8):              # words q .. q + 7
                    sel = const(range(q, q + 8), vec(i32, 8))
                    so = builder.zext(builder.shuffle_vector(cs, zero, sel), vl)
                    eo = builder.zext(builder.shuffle_vector(ce, zero, sel), vl)
                    n = builder.sub(eo, so)
                    long = builder.icmp_unsigned(">", n, splat(8))
                    lanes = builder.icmp_unsigned("<", const(range(q, q + 8)), cv)
                    if permute:     # byte j of word i: s_i + j and e_i - 8 + j (of 128 bytes)
                        rep = const([q + i // 8 for i in range(64)], vec(i32, 64))
                        ia = builder.add(builder.shuffle_vector(cs, zero, rep),
                                         const([i % 8 for i in range(64)], vt))
                        ib = builder.add(builder.shuffle_vector(ce, zero, rep),
                                         const([i % 8 - 8 for i in range(64)], vt))
                        a = builder.bitcast(builder.call(perm, [x0, ia, x1]), vl)
                        b = builder.bitcast(builder.call(perm, [x0, ib, x1]), vl)
                    else:
                        pa = builder.inttoptr(builder.add(base, so), pv)
                        pb = builder.inttoptr(builder.add(base, builder.select(
                            long, builder.sub(eo, splat(8)), so)), pv)
                        a = builder.call(gather, [pa, _ir.Constant(i32, 1), lanes, undef])
                        b = builder.call(gather, [pb, _ir.Constant(i32, 1), lanes, undef])
                    nn = builder.select(builder.icmp_unsigned("<", n, splat(8)), n, splat(8))
                    nn = builder.select(builder.icmp_unsigned("==", nn, splat(0)), splat(8), nn)
                    a = builder.and_(a, builder.lshr(splat(-1), builder.sub(
                        splat(64), builder.mul(nn, splat(8)))))
                    b = builder.select(long, b, splat(0))
                    h = builder.xor(builder.xor(builder.mul(a, splat(int(_K_FIRST))),
                                                builder.mul(b, splat(int(_K_LAST)))),
                                    builder.mul(n, splat(int(_K_LEN))))
                    h = builder.mul(builder.xor(h, builder.lshr(h, splat(32))),
                                    splat(int(_SPREAD)))
                    at = builder.gep(hary.data, [builder.add(args[5], _ir.Constant(i64, q))])
                    builder.call(store, [h, builder.bitcast(at, vl.as_pointer()),
                                         _ir.Constant(i32, 1), lanes])
                return c
            return _types.uint64(buf, base, s, e, hw, k), codegen
        return _intrinsic(hash_lanes)

    _hash_lanes = _make_hash_lanes(VECTOR)
    from numba.cpython.unsafe.numbers import leading_zeros as _leading_zeros
else:  # (the kernels only run compiled; these keep the module importable)
    def _load8(arr, idx):
        return np.uint64(int.from_bytes(arr[idx:idx + 8].tobytes(), "little"))

    def _word_bits64(arr, idx):
        return np.uint64(sum(1 << i for i, c in enumerate(arr[idx:idx + 64].tolist())
                             if H._WORD_LUT[c]))

    def _trailing_zeros(x):
        return (int(x) & -int(x)).bit_length() - 1

    def _leading_zeros(x):
        return 64 - int(x).bit_length()

    def _hash_lanes(buf, base, s, e, hw, k):
        raise NotImplementedError

