"""Build of the C core: csrc/src/*/*.c (one folder per layer, csrc/README.md) and the CPython binding
compiled into msprings._core.

One set of sources for every platform.  The preprocessor picks the thread layer (Windows
threads on Windows, POSIX threads elsewhere) and the vector path the processor always has
(SSE2 on x86-64, NEON on AArch64, plain doubles elsewhere); on x86-64, an AVX2 path is
compiled beside it and chosen at run time, and so is an AVX-512 one of the batched ensemble
kernel.  Only the compiler flags differ, so they are set here once the compiler is known.
"""
import os
import sys
from glob import glob

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# GCC and Clang: no fused multiply-adds, so every vector path rounds like the plain one.
GNU_FLAGS = ["-std=c11", "-O3", "-ffp-contract=off", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
# MSVC: C11 (restrict, _Static_assert) and /fp:precise, which since Visual Studio 2022
# contracts no multiply-add (earlier versions did under /arch:AVX2).
MSVC_FLAGS = ["/std:c11", "/O2", "/fp:precise", "/W3"]
# The AVX2 path: GCC and Clang compile it through a pragma in the file; MSVC needs the
# option, on this file alone so the rest of the core runs on any x86-64 processor.
AVX2_SOURCE = os.path.join("csrc", "src", "kernels", "springs_avx2.c")
# The AVX-512 batched ensemble kernel likewise, with /arch:AVX512 on its file alone.
AVX512_SOURCE = os.path.join("csrc", "src", "kernels", "springs_avx512.c")


class BuildCore(build_ext):
    """build_ext with each compiler's flags, and the AVX2 and AVX-512 files compiled apart under MSVC."""

    def build_extension(self, ext):
        if self.compiler.compiler_type != "msvc":
            ext.extra_compile_args = GNU_FLAGS
            ext.libraries = [] if sys.platform == "win32" else ["m", "pthread"]
            return super().build_extension(ext)
        ext.extra_compile_args = MSVC_FLAGS
        ext.libraries = []
        for source, arch in ((AVX2_SOURCE, "/arch:AVX2"), (AVX512_SOURCE, "/arch:AVX512")):
            if source in ext.sources:
                ext.sources = [other for other in ext.sources if other != source]
                ext.extra_objects = list(ext.extra_objects) + self.compiler.compile(
                    [source], output_dir=self.build_temp, include_dirs=ext.include_dirs,
                    extra_postargs=MSVC_FLAGS + [arch], depends=ext.depends)
        return super().build_extension(ext)


core = Extension(
    "msprings._core",
    sources=sorted(glob(os.path.join("csrc", "src", "*", "*.c"))) + sorted(glob(os.path.join("csrc", "binding", "*.c"))),
    include_dirs=[os.path.join("csrc", "include"), os.path.join("csrc", "src"), numpy.get_include()],
    depends=sorted(glob(os.path.join("csrc", "include", "msprings", "*.h")) + glob(os.path.join("csrc", "src", "*", "*.h"))
                   + glob(os.path.join("csrc", "binding", "*.h"))),
)

setup(ext_modules=[core], cmdclass={"build_ext": BuildCore})
