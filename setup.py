"""Build of the C core: csrc/src/*.c and the CPython binding compiled into msprings._core."""
from glob import glob

import numpy
from setuptools import Extension, setup

core = Extension(
    "msprings._core",
    sources=sorted(glob("csrc/src/*.c")) + ["csrc/binding/_core.c"],
    include_dirs=["csrc/include", numpy.get_include()],
    depends=sorted(glob("csrc/include/msprings/*.h") + glob("csrc/src/*.h")),
    # no fused multiply-adds: the vector and the plain code paths round alike
    extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers"],
    libraries=["m", "pthread"],
)

setup(ext_modules=[core])
