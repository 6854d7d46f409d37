"""build_identity: what Bazel cannot see but changes a training action's bytes, as one file.

Bazel keys an action by its declared inputs; LibTorch, the BLAS behind it and the compiler live outside the
workspace. @build_identity//:identity.txt names them (package versions, SHA-256 of the libraries actually
loaded, the OpenBLAS kernel family picked for this CPU) and training actions take it as an input, so their
cache keys, local and remote, change with any of them. Re-fetched when tools/bazel's SYSTEM_DEPS_DIGEST (the
installed versions and the libblas.so.3 alternative) or LIBTORCH changes.
"""

_LIB_DIR = "/usr/lib/x86_64-linux-gnu"

# Iterations an idle OpenMP thread spins before it sleeps; .bazelrc's test_env repeats it for tests.
OPENMP_SPIN_COUNT = "1000"

# OpenBLAS with DYNAMIC_ARCH picks its kernels from the CPU at load time (or OPENBLAS_CORETYPE, which tools/bazel
# sets from the CPU's instruction sets); sums then round differently.
_OPENBLAS_PROBE = """
char* openblas_get_corename(void);
char* openblas_get_config(void);
#include <stdio.h>
int main(void) { printf("%s (%s)\\n", openblas_get_corename(), openblas_get_config()); return 0; }
"""

_ATEN_CAPABILITY = ("f=$(grep -m1 '^flags' /proc/cpuinfo); " +
                    "case \"$f\" in *avx512f*avx512dq*avx512bw*avx512vl*) echo avx512;; " +
                    "*avx2*) case \"$f\" in *fma*) echo avx2;; *) echo default;; esac;; *) echo default;; esac")

def _first_line(rctx, argv, environment = {}):
    result = rctx.execute(argv, environment = environment)
    if result.return_code != 0:
        return "unavailable"
    return (result.stdout.strip().split("\n") or ["unavailable"])[0]

def _sha256(rctx, path):
    if not rctx.path(path).exists:
        return "missing"
    return rctx.execute(["sha256sum", str(path)]).stdout.split(" ")[0]

def _build_identity_impl(rctx):
    override = rctx.os.environ.get("LIBTORCH", "")
    torch_dir = (override + "/lib") if override else _LIB_DIR
    torch_cpu = _first_line(rctx, ["readlink", "-f", torch_dir + "/libtorch_cpu.so"])
    blas = _first_line(rctx, ["readlink", "-f", _LIB_DIR + "/libblas.so.3"])
    openblas = blas.rpartition("/")[0] + "/libopenblas.so.0"
    rctx.file("probe.c", _OPENBLAS_PROBE)
    core = "not OpenBLAS"
    coretype = rctx.os.environ.get("OPENBLAS_CORETYPE", "")
    if rctx.path(openblas).exists and rctx.execute(["cc", "probe.c", "-o", "probe", openblas]).return_code == 0:
        core = _first_line(rctx, ["./probe"], {"OPENBLAS_CORETYPE": coretype} if coretype else {})
        if coretype:
            core += " (OPENBLAS_CORETYPE=%s)" % coretype
    rctx.delete("probe.c")
    rctx.delete("probe")
    dpkg = ["dpkg-query", "-W", "-f=${Package} ${Version}\\n"]
    lines = [
        "libtorch: %s" % (("override LIBTORCH=" + override) if override else _first_line(rctx, dpkg + ["libtorch-dev"])),
        "libtorch_cpu: %s sha256:%s" % (torch_cpu, _sha256(rctx, torch_cpu)),
        "blas: %s sha256:%s" % (blas, _sha256(rctx, blas)),
        "blas_package: %s" % _first_line(rctx, dpkg + ["libopenblas0-openmp"]),
        "openblas_core: %s" % core,
        "compiler: %s" % _first_line(rctx, ["cc", "--version"]),
        "libc: %s" % _first_line(rctx, ["ldd", "--version"]),
        # ATen dispatches its CPU kernels by instruction set (AVX512 / AVX2 / default), not by CPU model.
        "aten_cpu_capability: %s" % _first_line(rctx, ["sh", "-c", _ATEN_CAPABILITY]),
    ]
    rctx.file("identity.txt", "\n".join(lines) + "\n")

    # The environment of every action that runs LibTorch: the same OpenBLAS kernels as the probe above, and OpenMP
    # threads that sleep after a short spin. libgomp's default spin (300k) made a 2-thread LM step 1.4-1.5x slower
    # beside one busy core; 1000 costs nothing idle (docs/measurements.md, "OpenMP waiting"). It changes no numbers.
    env = {"GOMP_SPINCOUNT": OPENMP_SPIN_COUNT}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    rctx.file("settings.bzl", "TORCH_ENV = %s\n" % repr(env))
    rctx.file("BUILD.bazel", 'package(default_visibility = ["//visibility:public"])\n\nexports_files(["identity.txt", "settings.bzl"])\n')

build_identity = repository_rule(
    implementation = _build_identity_impl,
    environ = ["LIBTORCH", "OPENBLAS_CORETYPE", "SYSTEM_DEPS_DIGEST"],
    local = True,
)
