"""kernlab's Triton compile step: one kernel, ahead of launch, for one architecture.

kernlab runs this with `python3` (or $KERNLAB_PYTHON) and a JSON request on stdin:

    {"file": "gelu.py", "source": "...", "kernel": "gelu_kernel",
     "signature": {"x_ptr": "*bf16", ..., "BLOCK": "constexpr"}, "constexprs": {"BLOCK": 1024},
     "divisible": ["x_ptr", "n"], "num_warps": 4, "num_stages": 3, "arch": 90,
     "out": "/path/to/a/new/folder"}

and reads back what it writes into `out`: kernel.cubin, one file per IR stage (kernel.ttir,
kernel.ttgir, kernel.llir, kernel.ptx) and meta.json (the launch facts kernlab needs: the
entry's name, shared memory, warps, stages, CTAs a cluster, the scratch sizes). The kernel is
compiled by Triton's own compiler for the target named, with no GPU needed. Exit status 4:
Triton is not installed; 3: the kernel did not compile (the reason on stderr).
"""
import importlib.util
import json
import os
import sys


def ptxas_report(out, arch, name):
    """ptxas -v on the kernel's PTX with the ptxas Triton uses: its registers, spills and
    shared memory as ptxas reports them (kernlab reads them where no GPU is at hand to ask)."""
    import subprocess
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        ptxas = get_ptxas(arch).path
        suffix = "a" if arch >= 90 else ""
        p = subprocess.run([ptxas, "-v", f"--gpu-name=sm_{arch}{suffix}",
                            os.path.join(out, "kernel.ptx"), "-o", os.devnull],
                           capture_output=True, text=True, timeout=120)
        return p.stderr
    except Exception as e:
        return f"(ptxas -v did not run: {e})"


def main():
    req = json.load(sys.stdin)
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError as e:
        print(f"Triton is not installed for {sys.executable} ({e})", file=sys.stderr)
        return 4
    out = os.path.abspath(req["out"])
    # @triton.jit reads its function's source from a file: the kernel's module is written
    # into the output folder as kernels/triton/FILE and imported from there, so that the IR's
    # source locations end in the repository's path.
    path = os.path.join(out, "kernels", "triton", req["file"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(req["source"])
    spec = importlib.util.spec_from_file_location("kernlab_triton_" + req["kernel"], path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, req["kernel"])
        # The arguments the launcher vouches are multiples of 16 (pointers 16-byte aligned),
        # as Triton's own launcher specializes them.
        attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]]
                 for n in req.get("divisible", [])}
        src = ASTSource(fn=fn, signature=req["signature"], constexprs=req["constexprs"],
                        attrs=attrs)
        compiled = triton.compile(
            src,
            target=GPUTarget("cuda", int(req["arch"]), 32),
            options={"num_warps": int(req["num_warps"]), "num_stages": int(req["num_stages"])},
        )
    except Exception as e:  # a compile error: its message is the report
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 3
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        with open(os.path.join(out, "kernel." + stage), "w") as f:
            f.write(compiled.asm[stage])
    with open(os.path.join(out, "kernel.cubin"), "wb") as f:
        f.write(compiled.asm["cubin"])
    md = compiled.metadata
    arch = int(req["arch"])
    meta_extra = {"ptxas_log": ptxas_report(out, arch, md.name)}
    cluster = getattr(md, "cluster_dims", None) or (1, 1, 1)
    meta = {
        "name": md.name,
        "shared": int(md.shared),
        "num_warps": int(md.num_warps),
        "num_stages": int(md.num_stages),
        "num_ctas": int(getattr(md, "num_ctas", 1)),
        "cluster_dims": [int(c) for c in cluster],
        "global_scratch_size": int(getattr(md, "global_scratch_size", 0)),
        "profile_scratch_size": int(getattr(md, "profile_scratch_size", 0)),
        "launch_cooperative_grid": bool(getattr(md, "launch_cooperative_grid", False)),
        "launch_pdl": bool(getattr(md, "launch_pdl", False)),
        "triton_version": triton.__version__,
        **meta_extra,
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
