"""TileInfer's own build macros: the nvcc rule and the pytest wrapper.

cuda_library compiles each .cu with nvcc for every architecture in CUDA_ARCHS and keeps the
`-Xptxas -v` report (registers, spills, shared memory per kernel and arch) as
`<name>_<src>.ptxas.txt`, so resource use can be read on a machine without a GPU.
"""

NVCC = "/usr/local/cuda/bin/nvcc"

# sm_80 (A100), sm_86 (RTX 30x0, the write-up's RTX 3050), sm_89 (RTX 40x0), sm_90 (H100/H200).
CUDA_ARCHS = ["80", "86", "89", "90"]

def _gencode(archs):
    return " ".join(["-gencode arch=compute_{a},code=sm_{a}".format(a = a) for a in archs])

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], config_copts = {}, archs = CUDA_ARCHS, **kwargs):
    """A cc_library made of nvcc-compiled objects (static cudart).

    Args:
      name: the cc_library.
      srcs: .cu files; each becomes one object, `<name>_<stem>.o`.
      hdrs: headers the .cu files include (exported by the library too).
      deps: cc_library deps; their headers are visible to nvcc via -I of the execroot.
      copts: extra nvcc flags.
      config_copts: more nvcc flags by configuration, {config_setting label: [flags]}
        (a select(); none match: no flags), e.g. the phase-trace build's define.
      archs: SM architectures, e.g. ["90"].
    """
    selected = ""
    if config_copts:
        choices = {label: " " + " ".join(flags) for label, flags in config_copts.items()}
        choices["//conditions:default"] = ""
        selected = select(choices)
    objs = []
    reports = []
    for src in srcs:
        stem = src.split("/")[-1].replace(".cu", "")
        obj = "%s_%s.o" % (name, stem)
        report = "%s_%s.ptxas.txt" % (name, stem)
        native.genrule(
            name = "%s_%s_nvcc" % (name, stem),
            srcs = [src] + hdrs + kwargs.get("data", []),
            outs = [obj, report],
            cmd = "{nvcc} -c -O3 -std=c++17 -lineinfo -Xcompiler -fPIC {gencode} {copts}".format(
                nvcc = NVCC,
                gencode = _gencode(archs),
                copts = " ".join(copts),
            ) + selected + (" -I. -I$(GENDIR) -Xptxas -v $(location {src}) -o $(location {obj}) " +
                            "2> $(location {report}) || {{ cat $(location {report}) >&2; exit 1; }}").format(
                src = src,
                obj = obj,
                report = report,
            ),
            message = "nvcc %s" % src,
        )
        objs.append(obj)
        reports.append(report)
    native.filegroup(name = name + "_ptxas", srcs = reports)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart_static"],
        alwayslink = 1,
        **{k: v for k, v in kwargs.items() if k != "data"}
    )

def py_pytest(name, srcs, deps = [], data = [], size = "small", tags = [], **kwargs):
    """A py_test that runs pytest on srcs[0] (the test file; other srcs are its helpers) through
    //third_party:pytest_main.py, which fails a file whose tests did not run."""
    native.py_test(
        name = name,
        srcs = srcs + ["//third_party:pytest_main.py"],
        main = "//third_party:pytest_main.py",
        args = ["$(rootpath %s)" % srcs[0]],
        deps = deps,
        data = data,
        size = size,
        tags = tags,
        python_version = "PY3",
        srcs_version = "PY3",
        **kwargs
    )

def cuda_fingerprint(name, obj, function):
    """A .cc defining `const char* <function>()` = SHA-256 (hex) of the nvcc object `obj`.

    The object holds the device code as built for every architecture, so any change to the
    worker (source, flags, compiler) changes the fingerprint the planner records.
    """
    native.genrule(
        name = name,
        srcs = [obj],
        outs = [name + ".cc"],
        cmd = ("sha=$$(sha256sum $(location {obj}) | cut -d' ' -f1) && " +
               "printf '// GENERATED: SHA-256 of {obj}.\\n#include \"cuda/worker.h\"\\n" +
               "namespace tileinfer {{ const char* {fn}() {{ return \"%s\"; }} }}\\n' $$sha > $@").format(
            obj = obj,
            fn = function,
        ),
    )
