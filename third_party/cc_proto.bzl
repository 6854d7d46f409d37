"""cc_proto_library for Debian's protoc: .proto -> generated C++ (genrule) -> cc_library."""

def cc_proto_library(name, srcs, deps = [], visibility = None):
    """C++ code for `srcs` (.proto files of this package); `deps` are other cc_proto_library targets.

    Imports resolve from the workspace root, so a .proto imports others by workspace path
    (import "config/experiment.proto";).
    """
    headers = [src[:-len(".proto")] + ".pb.h" for src in srcs]
    sources = [src[:-len(".proto")] + ".pb.cc" for src in srcs]
    native.genrule(
        name = name + "_protoc",
        srcs = srcs + [dep + "_srcs" for dep in deps],
        outs = headers + sources,
        tools = ["@protobuf//:protoc"],
        cmd = "$(location @protobuf//:protoc) --proto_path=. --cpp_out=$(GENDIR) " +
              " ".join(["$(location %s)" % src for src in srcs]),
    )
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs,
        visibility = visibility,
    )
    native.cc_library(
        name = name,
        srcs = sources,
        hdrs = headers,
        deps = deps + ["@protobuf"],
        visibility = visibility,
    )
