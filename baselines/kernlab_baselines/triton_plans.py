"""kernlab's Triton launches (`--triton-plans`, format 1, written by `kernlab bench --torch`):
at each shape, the kernel kernlab's `triton` variant launched (its file from kernels/triton/,
written beside the plans), its compile-time constants, num_warps, num_stages and grid. The
`triton` column launches that kernel with those choices through Triton's own launcher, so that
kernlab's in-process timing and do_bench here time the same kernel, launched the same way.
Loading the plans needs no triton; launching does."""

import importlib.util
import os
import re

from .common import is_int, load_plan_file

PLAN_VERSION = 1
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FILE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.py$")

NO_PLAN = ("no launch from kernlab for this shape: the triton column launches kernlab's "
           "Triton kernel (kernels/triton/) as `kernlab bench --torch` launched it, and kernlab "
           "handed none here (its triton variant did not run at this shape, or the script ran "
           "without --triton-plans)")


def load_triton_plans(path, op, dtype):
    """{shape tuple: plan} from `triton_plans.json`, each plan with "path", its kernel file's
    path beside the JSON. Raises ValueError where the file breaks the format or is for another
    op or dtype."""
    plans, base, need = load_plan_file(path, PLAN_VERSION, "Triton plan", op, dtype)
    out = {}
    for i, p in enumerate(plans):
        w = f"plan {i}"
        need(isinstance(p, dict), f"{w} is not an object")
        shape = p.get("shape")
        need(isinstance(shape, list) and len(shape) in (2, 3)
             and all(is_int(v) and v > 0 for v in shape), f"{w}: bad shape")
        need(isinstance(p.get("file"), str) and _FILE.match(p["file"]) is not None,
             f"{w}: bad file (a bare NAME.py)")
        need(isinstance(p.get("kernel"), str) and _IDENT.match(p["kernel"]) is not None,
             f"{w}: bad kernel")
        consts = p.get("constexprs")
        need(isinstance(consts, dict) and all(
            _IDENT.match(k) is not None and isinstance(v, (bool, int, float))
            for k, v in consts.items()), f"{w}: bad constexprs")
        need(is_int(p.get("num_warps")) and p["num_warps"] in (1, 2, 4, 8, 16, 32),
             f"{w}: bad num_warps")
        need(is_int(p.get("num_stages")) and 1 <= p["num_stages"] <= 16, f"{w}: bad num_stages")
        need(isinstance(p.get("grid"), list) and len(p["grid"]) == 3
             and all(is_int(v) and 1 <= v < 2 ** 31 for v in p["grid"]), f"{w}: bad grid")
        file_path = os.path.join(base, p["file"])
        need(os.path.isfile(file_path), f"{w}: {p['file']} is not beside the plans")
        key = tuple(shape)
        need(key not in out, f"{w}: a second plan for {'x'.join(map(str, shape))}")
        out[key] = dict(p, path=file_path)
    return out


_MODULES = {}


def plan_kernel(plan):
    """The @triton.jit function a plan names, from its file (each file imported once; Triton
    reads the kernel's source from that file)."""
    path = plan["path"]
    mod = _MODULES.get(path)
    if mod is None:
        name = "kernlab_triton_" + re.sub(r"\W", "_", os.path.basename(path)[:-3])
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _MODULES[path] = mod
    kernel = getattr(mod, plan["kernel"], None)
    if kernel is None:
        raise RuntimeError(f"{plan['file']} has no {plan['kernel']}")
    return kernel


def launch(plan, args):
    """Launch the plan's kernel on `args` (its arguments before the constants) through
    Triton's launcher, with the plan's grid, constants, warps and stages."""
    plan_kernel(plan)[tuple(plan["grid"])](
        *args, num_warps=plan["num_warps"], num_stages=plan["num_stages"],
        **plan["constexprs"])


def describe(plan):
    """The record's note: what kernlab's launch was."""
    consts = ", ".join(f"{k}={v}" for k, v in plan["constexprs"].items())
    grid = "x".join(str(g) for g in plan["grid"])
    return (f"kernlab's Triton kernel ({plan['file']}: {plan['kernel']}) launched through "
            f"Triton as kernlab launched it: {consts}, num_warps={plan['num_warps']}, "
            f"num_stages={plan['num_stages']}, grid {grid}")
