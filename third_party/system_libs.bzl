"""Repository rules exposing Debian system libraries to Bazel, verified at fetch time.

Each library is one `system_library` repository: it checks that the headers, libraries and tools it names
exist, symlinks them into the repository, and instantiates a BUILD file from third_party/<name>.BUILD.
A missing file fails the fetch with one line naming the Debian package that provides it. The package
versions (dpkg) are written to version.txt so that artifact manifests can record them.
"""

_DEB_LIB_DIR = "/usr/lib/x86_64-linux-gnu"
_DEB_INCLUDE_DIR = "/usr/include"

def _fail_missing(rctx, path, package):
    """Fails the fetch with one line naming the package to install (or the override to fix)."""
    if package == None:
        fail("%s: %s is missing; %s must name a LibTorch prefix with include/ and lib/" %
             (rctx.name, path, rctx.attr.root_env))
    fail("%s: %s is missing; install the Debian package %s (./tools/bazel installs tools/deps.txt)" %
         (rctx.name, path, package))

def _dpkg_version(rctx, package):
    result = rctx.execute(["dpkg-query", "-W", "-f=${Version}", package])
    if result.return_code != 0:
        return "not-installed"
    return result.stdout.strip()

def _matching_libraries(rctx, lib_dir, pattern):
    """Files in lib_dir whose name matches `pattern` (a literal name, or a prefix ending in '*' + suffix)."""
    if "*" not in pattern:
        path = rctx.path(lib_dir + "/" + pattern)
        return [path] if path.exists else []
    prefix, suffix = pattern.split("*", 1)
    names = sorted([
        entry.basename
        for entry in rctx.path(lib_dir).readdir()
        if entry.basename.startswith(prefix) and entry.basename.endswith(suffix)
    ])
    return [rctx.path(lib_dir + "/" + name) for name in names]

def _check_cxx11_abi(rctx, library):
    """Fails unless `library` uses the C++11 string ABI, as Debian's Abseil and Protobuf do."""
    result = rctx.execute(["sh", "-c", "nm -D --defined-only '%s' | grep -c __cxx11" % library])
    if result.stdout.strip() in ["", "0"]:
        fail("%s: %s uses the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0), which cannot link with Debian's " %
             (rctx.name, library) + "libraries; use a cxx11-ABI LibTorch build")

def _system_library_impl(rctx):
    override = rctx.os.environ.get(rctx.attr.root_env, "") if rctx.attr.root_env else ""
    if override:
        include_dir = override + "/include"
        lib_dir = override + "/lib"
        package = None
        if not rctx.path(override).exists:
            fail("%s: %s=%s does not exist" % (rctx.name, rctx.attr.root_env, override))
    else:
        include_dir = _DEB_INCLUDE_DIR
        lib_dir = _DEB_LIB_DIR
        package = rctx.attr.package

    for header in rctx.attr.headers:
        if not rctx.path(include_dir + "/" + header).exists:
            _fail_missing(rctx, include_dir + "/" + header, package)
    for entry in rctx.attr.include_entries:
        source = rctx.path(include_dir + "/" + entry)
        if not source.exists:
            _fail_missing(rctx, str(source), package)
        rctx.symlink(source, "include/" + entry)

    for pattern in rctx.attr.libraries:
        matches = _matching_libraries(rctx, lib_dir, pattern)
        if not matches:
            _fail_missing(rctx, lib_dir + "/" + pattern, package)
        for library in matches:
            rctx.symlink(library, "lib/" + library.basename)

    for name in rctx.attr.optional_libraries:
        if rctx.path(lib_dir + "/" + name).exists:
            rctx.symlink(lib_dir + "/" + name, "lib/" + name)

    if override and rctx.attr.abi_probe:
        _check_cxx11_abi(rctx, lib_dir + "/" + rctx.attr.abi_probe)

    for name, spec in rctx.attr.binaries.items():
        path, binary_package = spec.split("|")
        if not rctx.path(path).exists:
            _fail_missing(rctx, path, binary_package)
        rctx.symlink(path, "bin/" + name)

    versions = ["%s %s" % (p, _dpkg_version(rctx, p)) for p in rctx.attr.version_packages]
    if override:
        versions.append("override %s=%s" % (rctx.attr.root_env, override))
    rctx.file("version.txt", "\n".join(versions) + "\n")

    rctx.template(
        "BUILD.bazel",
        rctx.attr.build_file,
        substitutions = {
            # A library outside the loader's default path needs an rpath to be found at run time.
            "%{RPATH_LINKOPTS}": '"-Wl,-rpath,%s"' % lib_dir if override else "",
        },
    )

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        "package": attr.string(mandatory = True, doc = "Debian package providing the headers and libraries."),
        "version_packages": attr.string_list(doc = "Debian packages whose versions go into version.txt."),
        "headers": attr.string_list(doc = "Headers (relative to the include dir) that must exist."),
        "include_entries": attr.string_list(doc = "Files or directories of the include dir to expose."),
        "libraries": attr.string_list(doc = "Library file names; one '*' matches any run of characters."),
        "optional_libraries": attr.string_list(doc = "Library file names linked when present (CUDA parts)."),
        "abi_probe": attr.string(doc = "Library whose C++ ABI is checked when root_env overrides the prefix."),
        "binaries": attr.string_dict(doc = "Tool name -> 'absolute path|Debian package'."),
        "root_env": attr.string(doc = "Environment variable naming a prefix with include/ and lib/ to use instead."),
        "build_file": attr.label(mandatory = True, allow_single_file = True),
    },
    # SYSTEM_DEPS_DIGEST (set by tools/bazel from the installed package versions) re-fetches after an upgrade.
    environ = ["LIBTORCH", "SYSTEM_DEPS_DIGEST"],
    local = True,
)

def system_libraries():
    """Declares one repository per system library the project uses."""
    system_library(
        name = "libtorch",
        package = "libtorch-dev",
        version_packages = ["libtorch-dev", "libopenblas0-openmp"],
        root_env = "LIBTORCH",
        headers = ["torch/csrc/api/include/torch/torch.h", "ATen/ATen.h", "c10/core/Device.h"],
        include_entries = ["torch", "ATen", "c10", "caffe2"],
        libraries = ["libtorch.so", "libtorch_cpu.so", "libc10.so"],
        # A CUDA-enabled LibTorch (e.g. a PyTorch install's torch/ directory) adds these.
        optional_libraries = ["libtorch_cuda.so", "libc10_cuda.so"],
        abi_probe = "libc10.so",
        build_file = "//third_party:libtorch.BUILD",
    )

    # One sgemm per batch entry on strided views (ops/backend:batched_gemm): ATen's CPU bmm loops over the
    # batch with a select and an addmm_ per entry.
    system_library(
        name = "cblas",
        package = "libblas-dev",
        version_packages = ["libblas-dev", "libopenblas0-openmp"],
        headers = ["x86_64-linux-gnu/cblas.h"],
        include_entries = ["x86_64-linux-gnu/cblas.h", "x86_64-linux-gnu/cblas_mangling.h"],
        libraries = ["libblas.so"],
        build_file = "//third_party:cblas.BUILD",
    )
    system_library(
        name = "absl",
        package = "libabsl-dev",
        version_packages = ["libabsl-dev"],
        headers = ["absl/status/statusor.h", "absl/flags/parse.h", "absl/strings/str_format.h"],
        include_entries = ["absl"],
        libraries = ["libabsl_*.so"],
        build_file = "//third_party:absl.BUILD",
    )
    system_library(
        name = "protobuf",
        package = "libprotobuf-dev",
        version_packages = ["libprotobuf-dev", "protobuf-compiler"],
        headers = ["google/protobuf/text_format.h", "google/protobuf/descriptor.proto"],
        include_entries = ["google/protobuf"],
        libraries = ["libprotobuf.so"],
        binaries = {"protoc": "/usr/bin/protoc|protobuf-compiler"},
        build_file = "//third_party:protobuf.BUILD",
    )
    system_library(
        name = "re2",
        package = "libre2-dev",
        version_packages = ["libre2-dev"],
        headers = ["re2/re2.h"],
        include_entries = ["re2"],
        libraries = ["libre2.so"],
        build_file = "//third_party:re2.BUILD",
    )
    system_library(
        name = "icu",
        package = "libicu-dev",
        version_packages = ["libicu-dev"],
        headers = ["unicode/normalizer2.h"],
        include_entries = ["unicode"],
        libraries = ["libicuuc.so"],
        build_file = "//third_party:icu.BUILD",
    )
    system_library(
        name = "googletest",
        package = "libgmock-dev",
        version_packages = ["libgtest-dev", "libgmock-dev"],
        headers = ["gtest/gtest.h", "gmock/gmock.h"],
        include_entries = ["gtest", "gmock"],
        libraries = ["libgtest.a", "libgtest_main.a", "libgmock.a", "libgmock_main.a"],
        build_file = "//third_party:googletest.BUILD",
    )
    system_library(
        name = "benchmark",
        package = "libbenchmark-dev",
        version_packages = ["libbenchmark-dev"],
        headers = ["benchmark/benchmark.h"],
        include_entries = ["benchmark"],
        libraries = ["libbenchmark.so", "libbenchmark_main.a"],
        build_file = "//third_party:benchmark.BUILD",
    )
    system_library(
        name = "sentencepiece",
        package = "libsentencepiece-dev",
        version_packages = ["libsentencepiece-dev"],
        headers = ["sentencepiece_processor.h", "sentencepiece_trainer.h"],
        include_entries = ["sentencepiece_processor.h", "sentencepiece_trainer.h"],
        libraries = ["libsentencepiece.so", "libsentencepiece_train.so"],
        build_file = "//third_party:sentencepiece.BUILD",
    )
    system_library(
        name = "openssl",
        package = "libssl-dev",
        version_packages = ["libssl-dev"],
        headers = ["openssl/evp.h", "openssl/sha.h"],
        include_entries = ["openssl"],
        libraries = ["libcrypto.so"],
        build_file = "//third_party:openssl.BUILD",
    )
