"""kernlab's own launch replayed in PyTorch's process (the `kernlab_do_bench` column): the launch
plans kernlab writes (`--kernlab-plans`, format 1), the module image's kernel loaded and
launched through the CUDA driver API (`DriverKernel`, ctypes), and the call built from a plan
(`kernlab_fn`). Loading the plans needs no torch; launching needs libcuda and torch."""

import os

from .common import first_line, is_int, load_plan_file, shape_str

# kernlab's own kernel (its `auto` pick at a softmax shape), replayed here from the module image
# kernlab loaded (--kernlab-plans: kernel, launch shape, arguments), so that its calls and
# PyTorch's are timed by one harness in one process: at µs-sized calls two processes differ by
# up to 1.2 µs around the same kernel (kernlab's docs/perf-notes.md).
KERNLAB_VARIANT = "kernlab_do_bench"
PLAN_VERSION = 1


def load_kernlab_plans(path, op, dtype):
    """{(rows, cols): plan} from kernlab's launch plans (`kernlab_plans.json`, format 1), each
    plan with its module image's bytes (read from beside the JSON) under "image_bytes". Raises
    ValueError where the file breaks the format or is for another op or dtype."""
    plans, base, need = load_plan_file(path, PLAN_VERSION, "launch-plan", op, dtype)
    images, out = {}, {}
    for i, p in enumerate(plans):
        w = f"plan {i}"
        need(isinstance(p, dict), f"{w} is not an object")
        shape = p.get("shape")
        need(isinstance(shape, list) and len(shape) == 2
             and all(is_int(v) and v > 0 for v in shape), f"{w}: bad shape")
        need(isinstance(p.get("kernel"), str) and p["kernel"] != "", f"{w}: bad kernel")
        for k in ("grid", "block"):
            need(isinstance(p.get(k), list) and len(p[k]) == 3
                 and all(is_int(v) and 1 <= v < 2 ** 31 for v in p[k]), f"{w}: bad {k}")
        need(is_int(p.get("smem")) and 0 <= p["smem"] < 2 ** 31, f"{w}: bad smem")
        need(p.get("picked") is None or isinstance(p["picked"], str), f"{w}: bad picked")
        need(p["kernel"].endswith(f"_{dtype}"), f"{w}: kernel {p['kernel']} is not a {dtype} kernel")
        # The row kernels' arguments for this shape, contiguous rows, softmax (not log):
        # (x, y, rows, cols, ldx = cols, ldy = cols, lg = 0), and v8's csize = 1 where it takes it.
        # Anything else would launch on PyTorch's tensors with another layout: refused.
        rows, cols = shape
        want = ["x", "y", {"i32": rows}, {"i32": cols}, {"i64": cols}, {"i64": cols}, {"i32": 0}]
        args = p.get("args")
        need(args in (want, want + [{"i32": 1}]),
             f"{w}: the arguments are not a contiguous {rows}x{cols} softmax row launch's "
             f"(x, y, rows, cols, ldx, ldy, lg[, csize = 1]): {args!r}")
        img = p.get("image")
        need(isinstance(img, str) and img != "" and os.path.basename(img) == img
             and img not in (".", ".."), f"{w}: bad image name {img!r}")
        if img not in images:
            try:
                with open(os.path.join(base, img), "rb") as f:
                    images[img] = f.read()
            except OSError as e:
                raise ValueError(f"{path}: {w}: image {img}: {first_line(e)}")
            need(len(images[img]) > 0, f"{w}: image {img} is empty")
        key = (shape[0], shape[1])
        need(key not in out, f"{w}: shape {shape_str(shape)} planned twice")
        out[key] = dict(p, image_bytes=images[img])
    return out


class DriverKernel:
    """One kernel of a module image (CUBIN or NUL-terminated PTX), loaded and launched through
    the CUDA driver API (ctypes) in PyTorch's context (the device's primary context, current
    once torch has initialised CUDA), on the stream the caller passes."""
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    _libcuda = None
    _modules = {}  # image bytes -> loaded module: each image is loaded once a process

    def __init__(self, image, name, smem, cu=None):
        """`cu`: the driver's functions (default libcuda.so.1; the unit tests pass a fake)."""
        import ctypes
        self.ct = ctypes
        if cu is None and DriverKernel._libcuda is None:
            cu = ctypes.CDLL("libcuda.so.1")
            cu.cuModuleLoadData.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            cu.cuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
            cu.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            cu.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.c_void_p]
            cu.cuLaunchKernel.argtypes = ([ctypes.c_void_p] + [ctypes.c_uint] * 7
                                          + [ctypes.c_void_p] * 3)
            for f in (cu.cuModuleLoadData, cu.cuModuleGetFunction, cu.cuFuncSetAttribute,
                      cu.cuGetErrorName, cu.cuLaunchKernel):
                f.restype = ctypes.c_int
            DriverKernel._libcuda = cu
        self.cu = DriverKernel._libcuda if cu is None else cu
        self.name = name
        image = bytes(image)
        self.module, self.fn = DriverKernel._modules.get(image), ctypes.c_void_p()
        if self.module is None:
            self.module = ctypes.c_void_p()
            self.check(self.cu.cuModuleLoadData(ctypes.byref(self.module), image),
                       "cuModuleLoadData")
            DriverKernel._modules[image] = self.module
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(self.fn), self.module,
                                               name.encode()), "cuModuleGetFunction")
        if smem > 0:  # as kernlab does: static + dynamic past 48 KB needs the opt-in
            self.check(self.cu.cuFuncSetAttribute(
                self.fn, self.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                "cuFuncSetAttribute (dynamic shared memory)")

    def check(self, rc, what):
        if rc != 0:
            name = self.ct.c_char_p()
            self.cu.cuGetErrorName(rc, self.ct.byref(name))
            raise RuntimeError(f"{what} ({self.name}): "
                               f"{name.value.decode() if name.value else 'CUresult ' + str(rc)}")

    def launch(self, grid, block, smem, stream, values):
        """cuLaunchKernel with `values` (ctypes objects, in the kernel's parameter order)."""
        self.launcher(grid, block, smem, stream, values)()

    def launcher(self, grid, block, smem, stream, values):
        """A call that launches with `values` as they hold at each call: the parameter array
        (pointers to the ctypes objects) is built once, so a timed call costs one ctypes call
        (set a value's `.value` between calls to move a pointer)."""
        ct = self.ct
        params = (ct.c_void_p * len(values))(*[ct.cast(ct.byref(v), ct.c_void_p) for v in values])
        dims = (*grid, *block, smem)
        fn, cu = self.fn, self.cu

        def go():
            rc = cu.cuLaunchKernel(fn, *dims, stream, params, None)
            if rc != 0:
                self.check(rc, "cuLaunchKernel")
        # Required: params holds only addresses, not references, so these objects must live
        # as long as the launcher does.
        go.values = values
        return go


def kernlab_fn(torch, plan, shape, dtype, tdtype):
    """kernlab's launch at this shape (`plan`, from --kernlab-plans) as (fn(x) -> out, note):
    the same kernel from kernlab's module image, with the same launch shape and arguments, on
    PyTorch's tensors (contiguous, 16-byte aligned, as kernlab's were; `dtype` the run's dtype
    name, `tdtype` torch's) and the stream current when it is built (the one validation and
    do_bench run on)."""
    k = DriverKernel(plan["image_bytes"], plan["kernel"], plan["smem"])
    ct = k.ct
    scalars = [ct.c_int32(a["i32"]) if "i32" in a else ct.c_int64(a["i64"])
               for a in plan["args"][2:]]
    grid, block, smem = tuple(plan["grid"]), tuple(plan["block"]), plan["smem"]
    rows, cols = shape

    # The launch is built once, on the stream timing runs on; a call moves the two pointers
    # and launches, so its Python side stays far below do_bench's flush (a process whose
    # Python is slow would otherwise time our calls' Python, as compile's can be).
    xp, yp = ct.c_void_p(), ct.c_void_p()
    go = k.launcher(grid, block, smem, torch.cuda.current_stream().cuda_stream,
                    [xp, yp] + scalars)
    want = (rows, cols)

    def run(x):
        ptr = x.data_ptr()
        if x.shape != want or x.dtype != tdtype or ptr % 16 or not x.is_contiguous():
            raise RuntimeError(f"the plan is for a contiguous, 16-byte aligned {rows}x{cols} "
                               f"{dtype} tensor")
        out = torch.empty_like(x)
        xp.value, yp.value = ptr, out.data_ptr()
        go()
        return out

    note = (f"kernlab's auto ({plan.get('picked') or '?'}: {plan['kernel']}, grid "
            f"{'x'.join(map(str, grid))}, block {'x'.join(map(str, block))}"
            f"{f', {smem} B shared' if smem else ''}), launched from kernlab's module image "
            f"in this process")
    return run, note
