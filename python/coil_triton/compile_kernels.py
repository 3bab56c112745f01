"""Compiles Triton kernels to cubins with Triton's own compiler, for coil's GPU backend.

    python compile_kernels.py JOB.json     compile every kernel of the job
    python compile_kernels.py --version    print {"triton": VERSION, "python": VERSION} as JSON
                                           (exit status 3: this Python has no triton)

coil (src/runtime/triton_build.cpp) writes the job, runs this file as a subprocess at
compile time only and reads what it leaves; nothing here runs a kernel, so no GPU is
needed (Triton bundles ptxas). The job:

    {"workers": 8,                                   optional; default: one per usable core
     "kernels": [{
        "name": "add_kernel",                        file stem of the outputs
        "source": "/abs/add_kernel.py",              a module defining the @triton.jit function
        "function": "add_kernel",                    optional; default: name
        "signature": {"x": "*fp32", "n": "i32", "XBLOCK": "constexpr"},   every argument, in order
        "constexprs": {"XBLOCK": 1024},
        "divisibility": ["x"],                       arguments known to be multiples of 16
        "num_warps": 4, "num_stages": 3, "capability": 90,
        "options": {},                               optional; more of Triton's compile options
        "out_dir": "/abs/folder"}]}

For each kernel, in its out_dir, exactly one of:
    <name>.cubin + <name>.json   the binary and its launch facts (see launch_facts below)
    <name>.error                 Triton's message (or why the kernel was not compiled)
The exit status is 0 when every kernel compiled, 1 when some failed, 2 for a bad job.
"""

import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import traceback


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_function(path, function):
    """The @triton.jit function `function` of the module at `path`."""
    # One name per file: two kernels of one stem from different folders stay apart.
    module_name = f"coil_kernel_{abs(hash(os.path.abspath(path))):x}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # Triton's JIT reads the function's source through inspect, which finds it by module.
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, function):
        raise ValueError(f"{path} defines no function '{function}'")
    return getattr(module, function)


def ordered_signature(fn, kernel):
    """The job's signature in the function's argument order; every argument typed once."""
    signature = kernel["signature"]
    missing = [a for a in fn.arg_names if a not in signature]
    extra = [a for a in signature if a not in fn.arg_names]
    if missing or extra:
        raise ValueError(f"the signature does not match {kernel['function']}({', '.join(fn.arg_names)}): "
                         f"missing {missing}, unknown {extra}")
    unset = [a for a in fn.arg_names if signature[a] == "constexpr" and a not in kernel.get("constexprs", {})]
    if unset:
        raise ValueError(f"constexpr arguments without a value: {unset}")
    return {a: signature[a] for a in fn.arg_names}


def launch_facts(compiled, signature, kernel, triton_version):
    """What a launcher needs, read from the compiled kernel's metadata.

    `hidden_args` lists the pointers Triton appends after the declared arguments, in order,
    each with the bytes per program it needs (0: pass a null pointer). Which ones a kernel
    takes depends on the Triton version, so the list comes from the metadata fields present.
    """
    md = compiled.metadata
    hidden = []
    for kind in ("global", "profile"):
        if hasattr(md, f"{kind}_scratch_size"):
            hidden.append({"name": f"{kind}_scratch", "size": int(getattr(md, f"{kind}_scratch_size") or 0),
                           "align": int(getattr(md, f"{kind}_scratch_align", 1) or 1)})
    target = md.target
    return {
        "name": md.name,
        "num_warps": int(md.num_warps),
        "num_ctas": int(getattr(md, "num_ctas", 1)),
        "shared": int(md.shared),
        "hidden_args": hidden,
        "args": [{"name": a, "type": t} for a, t in signature.items() if t != "constexpr"],
        "launch_cooperative_grid": bool(getattr(md, "launch_cooperative_grid", False)),
        "launch_pdl": bool(getattr(md, "launch_pdl", False)),
        "target": {"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size},
        "triton_version": triton_version,
        "function": kernel["function"],
    }


def source_line(error, fn, path):
    """'File "PATH", line N' for an error Triton places in the kernel's own body, else ''.

    Triton counts lines from the kernel's `def`; a person reads the file. Reads attributes
    of Triton's JITFunction, so an older or newer Triton without them gets no line.
    """
    node = getattr(error, "node", None)
    lines = getattr(fn, "raw_src", None)
    first = getattr(fn, "starting_line_number", None)
    if not hasattr(node, "lineno") or lines is None or first is None or getattr(error, "src", None) != fn.src:
        return ""
    decorators = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
    return f'File "{path}", line {first + decorators + node.lineno - 1}'


def compile_one(kernel):
    """Compiles one kernel into its out_dir; returns (name, error text or None)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    name = kernel["name"]
    out_dir = kernel["out_dir"]
    fn = None
    try:
        fn = load_function(kernel["source"], kernel["function"])
        signature = ordered_signature(fn, kernel)
        attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in kernel.get("divisibility", [])}
        options = dict(kernel.get("options", {}), num_warps=kernel["num_warps"], num_stages=kernel["num_stages"])
        # Denormals kept, as PyTorch's CUDA kernels keep them: Triton builds libdevice's functions
        # flushing them to zero by default (the log of a denormal -inf, the ceil of one 0). A
        # Triton without the option ignores it.
        options.setdefault("enable_reflect_ftz", False)
        # No contraction of a product and a sum into one fused multiply-add, as the C++ dialect
        # compiles with -ffp-contract=off: every op rounds as eager's op does. Contracted, a value
        # used both rounded and inside a difference differs from itself: the deviation of a row's
        # one element from its mean, fma(a, b, -round(a * b)), is not 0, and its variance with
        # correction 1 is inf where eager's is NaN.
        options.setdefault("enable_fp_fusion", False)
        source = ASTSource(fn=fn, signature=signature, constexprs=kernel.get("constexprs", {}), attrs=attrs)
        compiled = triton.compile(source, target=GPUTarget("cuda", kernel["capability"], 32), options=options)
        facts = launch_facts(compiled, signature, kernel, triton.__version__)
        with open(os.path.join(out_dir, name + ".cubin"), "wb") as f:
            f.write(compiled.asm["cubin"])
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
            json.dump(facts, f, indent=2)
            f.write("\n")
        return name, None
    except Exception as e:  # every failure belongs to its kernel; the others go on
        message = "".join(traceback.format_exception_only(type(e), e)).strip()
        where = source_line(e, fn, kernel["source"])
        if where:
            message = where + "\n" + message
        with open(os.path.join(out_dir, name + ".error"), "w") as f:
            f.write(message + "\n")
        return name, message


def with_defaults(kernel):
    kernel = dict(kernel)
    kernel.setdefault("function", kernel["name"])
    kernel.setdefault("num_warps", 4)
    kernel.setdefault("num_stages", 3)
    kernel.setdefault("capability", 90)
    return kernel


def warm_up():
    """Does once, before the workers fork, what every process repeats on its first compile:
    Triton hashes its own files and library for its cache key (half a second in 3.6)."""
    try:
        from triton.runtime.cache import triton_key
        triton_key()
    except (ImportError, AttributeError):  # another Triton: nothing to share
        pass


def compile_all(kernels, workers):
    """(name, error) per kernel; in parallel when there are several and workers > 1."""
    if workers <= 1 or len(kernels) <= 1:
        return [compile_one(k) for k in kernels]
    # Forked workers start at once with triton already imported; spawned ones would each
    # pay the import. The parent compiles nothing itself, so it holds no LLVM threads.
    warm_up()
    context = multiprocessing.get_context("fork")
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(compile_one, k) for k in kernels]
        for kernel, future in zip(kernels, futures):
            try:
                results.append(future.result())
            except Exception as e:  # a worker died (a crash in LLVM or ptxas takes the pool down)
                message = f"the compiler process stopped: {type(e).__name__}: {e}"
                with open(os.path.join(kernel["out_dir"], kernel["name"] + ".error"), "w") as f:
                    f.write(message + "\n")
                results.append((kernel["name"], message))
    return results


def print_version():
    from importlib.metadata import PackageNotFoundError, version
    try:
        triton_version = version("triton")
    except PackageNotFoundError:
        print(f"{sys.executable} has no triton package", file=sys.stderr)
        return 3
    print(json.dumps({"triton": triton_version, "python": sys.version.split()[0]}))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--version":
        return print_version()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            job = json.load(f)
        kernels = [with_defaults(k) for k in job["kernels"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"bad job {argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    workers = min(int(job.get("workers") or usable_cores()), len(kernels))
    # Triton's own cache would keep a second copy of every kernel in ~/.triton; coil's
    # cache is the one that counts, so Triton's lives and dies with this process.
    triton_cache = tempfile.mkdtemp(prefix="coil-triton-cache-")
    os.environ["TRITON_CACHE_DIR"] = triton_cache
    try:
        import triton  # noqa: F401  (imported once, before the workers fork)
        results = compile_all(kernels, workers)
    finally:
        shutil.rmtree(triton_cache, ignore_errors=True)
    failed = [name for name, error in results if error is not None]
    print(f"compiled {len(results) - len(failed)} of {len(results)} kernels with {workers} workers"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
