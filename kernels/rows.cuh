// rows.cuh — a row held in registers: the machinery the row ops share (softmax, rmsnorm).
//
// A thread holds K slots of a row. Slot k covers columns [(k·stride + tid)·VEC, … + VEC): with
// VEC the pack width (16 bytes: 4 f32 or 8 sixteen-bit values) a slot is one 16-byte load,
// kept as it came from memory (one uint4), so a 16-bit row costs half the registers of an
// unpacked one; with VEC == 1 a slot is one element, kept as a float. Packed loads need cols,
// the row stride and the base 16-byte aligned (the launchers check). Slots past the row's end
// hold the caller's padding: a value that leaves the row's reduction unchanged (−inf for a
// max, 0 for a sum of squares).
#pragma once
#include "common.cuh"

template <class T, int VEC, int K> struct RowSlots {
    static constexpr bool PACKED = VEC > 1;
    uint4 raw[PACKED ? K : 1];
    float val[PACKED ? 1 : K];

    // The first column of slot k.
    static __device__ __forceinline__ int col(int k, int tid, int stride) { return (k * stride + tid) * VEC; }

    // Load the row's `cols` elements; slots past the end get `pad` (packed) or `padf` (scalar).
    __device__ __forceinline__ void load(const T* row, int cols, int tid, int stride, uint4 pad, float padf) {
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c0 = col(k, tid, stride);
            if constexpr (PACKED) raw[k] = c0 < cols ? ld16_row(row + c0) : pad;
            else val[k] = c0 < cols ? to_f32(row[c0]) : padf;
        }
    }
    // Slot k as f32 values. The empty volatile asm makes each pass unpack afresh: without it
    // the compiler keeps all K·VEC unpacked floats live across the passes (64 for bf16 at
    // K = 8) and spills.
    __device__ __forceinline__ void get(int k, float* v) const {
        if constexpr (PACKED) {
            uint4 u = raw[k];
            asm volatile("" : "+r"(u.x), "+r"(u.y), "+r"(u.z), "+r"(u.w));
            unpack(u, v, (const T*)nullptr);
        } else {
            v[0] = val[k];
        }
    }
    // Σ e(x) over this thread's slots, padding included.
    template <class F> __device__ __forceinline__ float sum_with(F e) const {
        float s = 0.0f;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            float v[VEC];
            get(k, v);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) s += e(v[j]);
        }
        return s;
    }
    // Write out(v, c) for each element v of the row at its column c (slots past `cols` write
    // nothing); a packed slot leaves as one 16-byte store.
    template <class F> __device__ __forceinline__ void store_each(T* row, int cols, int tid, int stride, F out) const {
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c0 = col(k, tid, stride);
            if (c0 >= cols) continue;
            float v[VEC];
            get(k, v);
            out(v, c0);
            if constexpr (PACKED) st16(row + c0, pack(v, row));
            else row[c0] = from_f32<T>(v[0]);
        }
    }
};
