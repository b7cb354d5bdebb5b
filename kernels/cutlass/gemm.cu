// kernlab's CUTLASS tier: c = epi(a · wᵀ) by a CUTLASS 3.x Hopper GEMM, in the shape of the
// CollectiveBuilder skeleton: TMA loads, wgmma, a warp-specialised persistent kernel, and the
// epilogue from CUTLASS's fusion operations (the per-column bias and the GeLU of linear). The
// schedules are named (cooperative: two consumer warp groups share each 128×256 tile) rather
// than KernelScheduleAuto: CUTLASS's auto epilogue schedule takes no fusion. a is M×K row-major, w is N×K row-major (B column-major in CUTLASS's
// terms: K contiguous), c is M×N row-major.
//
// One shared object a (dtype, epilogue, kernel), built at first use by kernlab with nvcc:
//   -DKL_ELEMENT=cutlass::bfloat16_t|cutlass::half_t  -DKL_EPILOGUE=0|1|2|3
//   (0: none; 1: + bias; 2: GeLU tanh(+ bias); 3: GeLU erf(+ bias))
//   -DKL_KERNEL=0|1|2 (the schedule, CTA tile and cluster below)
// and called through the C functions at the end, on kernlab's stream. The tile scheduler's
// raster order and swizzle are run-time arguments of those functions (kernlab's autotune
// searches them with the kernels).
#include <cstdio>
#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#ifndef KL_ELEMENT
#define KL_ELEMENT cutlass::bfloat16_t
#endif
#ifndef KL_EPILOGUE
#define KL_EPILOGUE 0
#endif
#ifndef KL_KERNEL
#define KL_KERNEL 0
#endif

using namespace cute;

using Element = KL_ELEMENT;
using Accumulator = float;
using Compute = float;
using LayoutA = cutlass::layout::RowMajor;     // a: M×K, K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // w: N×K, K contiguous
using LayoutC = cutlass::layout::RowMajor;     // c: M×N
constexpr int kAlign = 128 / cutlass::sizeof_bits<Element>::value;  // 16-byte accesses

// 0: cooperative, 128×256 tile, clusters of 2×1 (w's tile multicast to the pair);
// 1: cooperative, 256×128, clusters of 1×2 (a's tile multicast);
// 2: ping-pong, 64×256 a consumer warp group (each group its own tile, so one group's
//    epilogue overlaps the other's main loop), clusters of 2×1.
#if KL_KERNEL == 0
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#elif KL_KERNEL == 1
using TileShape = Shape<_256, _128, _64>;
using ClusterShape = Shape<_1, _2, _1>;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#else
using TileShape = Shape<_64, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
using MainSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpiSchedule = cutlass::epilogue::TmaWarpSpecialized;
#endif

// The epilogue: D = act(acc + bias[n]) with the source C not read (beta = 0).
#if KL_EPILOGUE == 0
using Fusion = cutlass::epilogue::fusion::LinearCombination<Element, Compute, Element, Compute>;
#elif KL_EPILOGUE == 1
using Fusion = cutlass::epilogue::fusion::LinCombPerColBias<Element, Compute, Element, Element,
                                                            Compute>;
#elif KL_EPILOGUE == 2
using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
    cutlass::epilogue::thread::GELU_taylor, Element, Compute, Element, Element, Compute>;
#else
using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
    cutlass::epilogue::thread::GELU, Element, Compute, Element, Element, Compute>;
#endif

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, Accumulator, Compute,
    Element, LayoutC, kAlign, Element, LayoutC, kAlign,
    EpiSchedule, Fusion>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element,
    LayoutB, kAlign, Accumulator, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
        sizeof(typename Epilogue::SharedStorage))>,
    MainSchedule>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

// The persistent grid: the SM count and how many clusters fit at once, asked once a process
// (CUTLASS's own grid rule assumes a full GH100's 144 SMs where the driver is not asked).
static cutlass::KernelHardwareInfo hardware() {
    static cutlass::KernelHardwareInfo hw = [] {
        int device = 0;
        cudaGetDevice(&device);
        return cutlass::KernelHardwareInfo::make_kernel_hardware_info<Kernel>(device);
    }();
    return hw;
}

// raster: 0 CUTLASS's heuristic, 1 along M, 2 along N; swizzle: tiles a swizzle band (1, 2,
// 4 or 8).
static typename Gemm::Arguments arguments(const void* a, const void* w, const void* bias,
                                          void* c, int m, int n, int k, int raster,
                                          int swizzle) {
    auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(m, k, 1));
    auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(n, k, 1));
    auto sc = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(m, n, 1));
    auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(m, n, 1));
    typename Gemm::Arguments args{
        cutlass::gemm::GemmUniversalMode::kGemm,
        {m, n, k, 1},
        {static_cast<const Element*>(a), sa, static_cast<const Element*>(w), sb},
        {{}, static_cast<const Element*>(c), sc, static_cast<Element*>(c), sd},
        hardware()};
    using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
    args.scheduler.raster_order =
        raster == 1 ? Raster::AlongM : raster == 2 ? Raster::AlongN : Raster::Heuristic;
    args.scheduler.max_swizzle_size = swizzle;
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = 0.0f;
#if KL_EPILOGUE != 0
    args.epilogue.thread.bias_ptr = static_cast<const Element*>(bias);
#else
    (void)bias;
#endif
    return args;
}

static int fail(char* err, int len, const char* what, const char* why) {
    if (err && len > 0) snprintf(err, len, "%s: %s", what, why);
    return 1;
}

// The device memory the GEMM needs beside its operands, in bytes.
extern "C" size_t kl_cutlass_workspace_bytes(int m, int n, int k, int raster, int swizzle) {
    return Gemm::get_workspace_size(
        arguments(nullptr, nullptr, nullptr, nullptr, m, n, k, raster, swizzle));
}

// c = epi(a · wᵀ) on `stream`. 0 on success, else 1 with the reason in err.
extern "C" int kl_cutlass_gemm(const void* a, const void* w, const void* bias, void* c, int m,
                               int n, int k, int raster, int swizzle, void* workspace,
                               void* stream, char* err, int err_len) {
    Gemm gemm;
    auto args = arguments(a, w, bias, c, m, n, k, raster, swizzle);
    cutlass::Status s = gemm.can_implement(args);
    if (s != cutlass::Status::kSuccess)
        return fail(err, err_len, "can_implement", cutlassGetStatusString(s));
    s = gemm.initialize(args, workspace, static_cast<cudaStream_t>(stream));
    if (s != cutlass::Status::kSuccess)
        return fail(err, err_len, "initialize", cutlassGetStatusString(s));
    s = gemm.run(static_cast<cudaStream_t>(stream));
    if (s != cutlass::Status::kSuccess)
        return fail(err, err_len, "run", cutlassGetStatusString(s));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return fail(err, err_len, "launch", cudaGetErrorString(e));
    return 0;
}
