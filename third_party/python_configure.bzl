"""Repository rule for the python3 on PATH (or $TILEINFER_PYTHON).

Gives @local_python//:headers (its C headers), @local_python//:pybind11 (the headers of
the pybind11 pip package installed for it), and a py_runtime
toolchain so that py_binary and py_test run that interpreter, which has the packages that
./setup.sh installed. Nothing is downloaded.
"""

_PROBE = """
import sys, sysconfig
print(sys.executable)
print(sysconfig.get_paths()["include"])
print("%d.%d" % sys.version_info[:2])
print(sysconfig.get_config_var("EXT_SUFFIX"))
try:
    import pybind11
    print(pybind11.get_include())
except ImportError:
    print("")
"""

def _python_configure_impl(ctx):
    python = ctx.os.environ.get("TILEINFER_PYTHON") or ctx.which("python3")
    if not python:
        fail("python3 was not found on PATH: run ./setup.sh, or set TILEINFER_PYTHON to an interpreter.")
    result = ctx.execute([python, "-c", _PROBE])
    if result.return_code != 0:
        fail("could not query %s: %s" % (python, result.stderr))
    executable, include, version, ext_suffix, pybind11_include = result.stdout.strip().split("\n")
    ctx.symlink(include, "include")
    if not pybind11_include:
        fail("pybind11 is not installed for %s: run ./setup.sh (it pins pybind11 in requirements.txt)." % python)
    ctx.symlink(pybind11_include, "pybind11_include")
    ctx.file("BUILD", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)

# pybind11 from the interpreter's pip package (Debian's 2.10 predates NumPy 2's ABI).
cc_library(
    name = "pybind11",
    hdrs = glob(["pybind11_include/pybind11/**/*.h"]),
    includes = ["pybind11_include"],
    deps = [":headers"],
)

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{executable}",
    python_version = "PY3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "python_toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""".format(executable = executable))
    ctx.file("python_info.bzl", "PYTHON_VERSION = \"%s\"\nEXT_SUFFIX = \"%s\"\n" % (version, ext_suffix))

python_configure = repository_rule(
    implementation = _python_configure_impl,
    environ = ["PATH", "TILEINFER_PYTHON"],
    local = True,
)
