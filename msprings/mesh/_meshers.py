"""Third-party tetrahedral meshers behind one function, each an optional extra.

:func:`external_mesher` fills a closed triangle surface with tetrahedra using one of
:data:`MESHERS`:

* ``"tetgen"``: TetGen through PyPI ``tetgen``.  A constrained Delaunay, quality
  tetrahedralisation that keeps the input surface exactly (it may add points on its
  triangles, never moves them; merging nearly coplanar triangles is switched off, as it
  put points off the surface): the tets fill the enclosed polyhedron exactly.  Input
  vertices keep their indices (TetGen numbers them first) unless they are unused or
  duplicated.  Refuses an open surface; on some self-intersecting surfaces the library
  corrupts its memory and aborts the process, on non-finite coordinates it loops forever.
* ``"ftetwild"``: fTetWild through PyPI ``wildmeshing`` (or ``pytetwild`` where that is
  installed and wildmeshing is not).  Robust to imperfect input (holes,
  self-intersections, overlapping parts): the output surface only approximates the input,
  within an envelope of 1e-3 of the bounding-box diagonal, so the volume is not exact.
  Slower (seconds to a minute) and chatty on the console.  It segfaults on non-finite coordinates.
* ``"gmsh"``: Gmsh through PyPI ``gmsh``.  The triangles are kept as a discrete surface
  (split into four at their edge midpoints while they are much coarser than the requested
  size, which keeps the surface exact) and the volume inside is meshed by Delaunay
  refinement.  Input vertices keep their indices (numbered first).  It reports intersecting triangles and makes no tetrahedra for an open
  surface (both ValueError here); the check of the filled volume against the enclosed one
  (see :func:`external_mesher`) is there for a wrong result it might return silently.

Because two of these can take the interpreter down, and all of them print, every call runs
the mesher in a child Python process by default (``isolate=True``): a crash, an abort or a
timeout of the child becomes an exception in the caller, and the mesher's console output is
captured and quoted in the error message.  Starting the child costs about 0.1-0.5 s.  The
child is this file run as a script, so it needs only NumPy and the mesher's package.

The packages are imported only when used: importing this module imports NumPy and the
standard library only.  Lengths are in metres, volumes in cubic metres.
"""
from __future__ import annotations

import importlib.util
import json
import math
import numbers
import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Callable

import numpy as np

MESHERS: tuple[str, ...] = ("tetgen", "ftetwild", "gmsh")
"""Names accepted by :func:`external_mesher`, as users pass them to ``mesher=``."""

#: For each mesher, the modules that provide it, preferred first.  fTetWild comes from
#: ``wildmeshing`` (13 MB, NumPy only) or else from ``pytetwild``, whose import pulls in
#: PyVista and VTK (600 MB, 2 s to import) but which has wheels where wildmeshing has none
#: (Windows, Linux aarch64, Python 3.14).
_PACKAGES: dict[str, tuple[str, ...]] = {
    "tetgen": ("tetgen",),
    "ftetwild": ("wildmeshing", "pytetwild"),
    "gmsh": ("gmsh",),
}

#: The pip command named when a mesher's package is missing.
_INSTALL: dict[str, str] = {
    "tetgen": "pip install tetgen",
    "ftetwild": "pip install wildmeshing",
    "gmsh": "pip install gmsh",
}

#: Relative tolerance on the total tet volume against the enclosed volume, for the meshers
#: that keep the input surface exactly; a larger difference means the mesher misread the
#: surface (self-intersecting, overlapping or open) and is reported as a failure.
EXACT_VOLUME_RTOL = 1e-6

#: Radius-edge ratio bound (circumradius / shortest edge) TetGen refines to; sqrt(2) is
#: the bound its theory guarantees to terminate, 1.5 leaves it a margin on sharp inputs.
_TETGEN_RADIUS_EDGE = 1.5

#: fTetWild's envelope: the output surface lies within this fraction of the bounding-box
#: diagonal from the input surface (its default).
FTETWILD_EPSILON = 1e-3

#: Gmsh: the surface is refined (each triangle into four) while its median edge is longer
#: than this many times the requested edge length.
_GMSH_REFINE_ABOVE = 1.5

#: Lines of the mesher's console output quoted in an error message.
_QUOTED_LINES = 12

#: Gmsh's API works on one global model: in-process calls from several threads take turns.
_GMSH_LOCK = threading.Lock()


def regular_tet_volume(edge_length: float) -> float:
    """Volume (m^3) of a regular tetrahedron of edge ``edge_length`` (m): ``L^3 / (6 sqrt 2)``."""
    return edge_length ** 3 / (6.0 * math.sqrt(2.0))


def tet_volumes(nodes: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Signed volume (m^3) of each tetrahedron, ``det[p1-p0, p2-p0, p3-p0] / 6``; positive
    for a positively oriented tet.  ``nodes`` (N, 3) in metres, ``tets`` (T, 4) indices."""
    p = nodes[tets]
    a, b, c = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]
    return np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0


# ---- checks and clean-up in the caller ---------------------------------------------------


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (a ``None`` entry in
    ``sys.modules`` counts as missing, as it makes ``import`` fail)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _backend(name: str) -> str | None:
    """The first installed module that provides mesher ``name``, or None."""
    return next((module for module in _PACKAGES[name] if _installed(module)), None)


def _missing(name: str) -> ImportError:
    alternative = ("; where wildmeshing has no wheel (Windows, Linux aarch64, Python 3.14), "
                   "`pip install pytetwild pyvista` provides it too") if name == "ftetwild" else ""
    return ImportError(f"mesher={name!r} needs the Python package {_PACKAGES[name][0]!r}, which is not "
                       f"installed: run `{_INSTALL[name]}`{alternative}")


def _check_input(name: object, vertices: object, faces: object,
                 edge_length: object) -> tuple[str, np.ndarray, np.ndarray, float]:
    """Validated copies: the mesher's name, vertices (n, 3) float64, faces (F, 3) int64 and
    the edge length (m) as a float; TypeError or ValueError naming the argument."""
    if not isinstance(name, str):
        raise TypeError(f"mesher must be a string, one of {MESHERS}, not {type(name).__name__}")
    if name not in MESHERS:
        raise ValueError(f"mesher must be one of {MESHERS}, got {name!r}")
    try:
        x = np.array(vertices, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"vertices must be an (n, 3) array of numbers: {error}") from None
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"vertices must have shape (n, 3), got {x.shape}")
    if len(x) < 4:
        raise ValueError(f"vertices must hold at least 4 points to enclose a volume, got {len(x)}")
    if not np.all(np.isfinite(x)):
        raise ValueError("vertices must be finite (no NaN or infinity)")
    f = np.asarray(faces)
    if f.dtype == bool or not (np.issubdtype(f.dtype, np.integer) or f.size == 0):
        raise ValueError(f"faces must be an (F, 3) array of integer vertex indices, got dtype {f.dtype}")
    f = f.astype(np.int64)
    if f.ndim != 2 or f.shape[1] != 3:
        raise ValueError(f"faces must have shape (F, 3), got {f.shape}")
    if len(f) < 4:
        raise ValueError(f"faces must hold at least 4 triangles to enclose a volume, got {len(f)}")
    if f.min() < 0 or f.max() >= len(x):
        raise ValueError(f"faces must index vertices 0 to {len(x) - 1}, got indices {f.min()} to {f.max()}")
    if isinstance(edge_length, bool) or not isinstance(edge_length, numbers.Real):
        raise TypeError(f"edge_length must be a real number (m), not {type(edge_length).__name__}")
    length = float(edge_length)
    if not (math.isfinite(length) and length > 0):
        raise ValueError(f"edge_length must be finite and > 0 (m), got {edge_length!r}")
    diagonal = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
    if length > diagonal:
        raise ValueError(f"edge_length = {length:g} m is longer than the surface's bounding-box "
                         f"diagonal ({diagonal:g} m)")
    return name, x, f, length


def _clean(name: str, nodes: np.ndarray, tets: np.ndarray, vertices: np.ndarray, faces: np.ndarray,
           edge_length: float) -> tuple[np.ndarray, np.ndarray]:
    """The mesher's output made to the contract: float64 nodes, int64 tets, each positively
    oriented, none of zero volume, no unused node.  ValueError if nothing is left or if a
    mesher that keeps the surface did not fill the volume it encloses."""
    nodes = np.ascontiguousarray(nodes, dtype=np.float64).reshape(-1, 3)
    tets = np.ascontiguousarray(tets, dtype=np.int64).reshape(-1, 4)
    if len(tets) == 0:
        raise ValueError(f"mesher {name!r} made no tetrahedra: is the surface closed?")
    if tets.min() < 0 or tets.max() >= len(nodes) or not np.all(np.isfinite(nodes)):
        raise ValueError(f"mesher {name!r} returned an invalid mesh (indices out of range or "
                         "non-finite nodes)")
    volume = tet_volumes(nodes, tets)
    flip = volume < 0
    tets[flip] = tets[flip][:, [0, 1, 3, 2]]
    volume = np.abs(volume)
    keep = volume > 1e-12 * regular_tet_volume(edge_length)
    tets = tets[keep]
    if len(tets) == 0:
        raise ValueError(f"mesher {name!r} made only flat tetrahedra")
    used = np.zeros(len(nodes), dtype=bool)
    used[tets.ravel()] = True
    if not used.all():
        renumber = np.cumsum(used) - 1
        nodes, tets = nodes[used], renumber[tets]
    if name in ("tetgen", "gmsh"):
        centred = vertices - 0.5 * (vertices.min(axis=0) + vertices.max(axis=0))  # no cancellation far out
        a, b, c = centred[faces[:, 0]], centred[faces[:, 1]], centred[faces[:, 2]]
        enclosed = abs(float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0))
        filled = float(volume[keep].sum())
        if not abs(filled - enclosed) <= EXACT_VOLUME_RTOL * max(enclosed, filled):
            raise ValueError(f"mesher {name!r} filled {filled:.6g} m^3 where the surface encloses "
                             f"{enclosed:.6g} m^3: the surface is probably open, self-intersecting "
                             "or made of overlapping parts (mesher='ftetwild' copes with those)")
    return nodes, tets


# ---- the meshers, run in the process that imports them ------------------------------------


def _import(name: str):  # noqa: ANN202 (a module)
    module = _backend(name)
    if module is None:
        raise _missing(name)
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{_missing(name)} (importing it failed: {error})") from error


def _run_tetgen(vertices: np.ndarray, faces: np.ndarray, edge_length: float) -> tuple[np.ndarray, np.ndarray]:
    tetgen = _import("tetgen")
    try:
        generator = tetgen.TetGen(vertices, faces.astype(np.int32))
        nodes, tets = generator.tetrahedralize(
            plc=True, quality=True, minratio=_TETGEN_RADIUS_EDGE,
            fixedvolume=True, maxvolume=regular_tet_volume(edge_length),
            nomergefacet=True,  # merged near-coplanar triangles get points off the surface
            quiet=True, nowarning=True)[:2]
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"mesher 'tetgen' failed: {error}") from None
    return np.asarray(nodes), np.asarray(tets)


def _run_ftetwild(vertices: np.ndarray, faces: np.ndarray, edge_length: float) -> tuple[np.ndarray, np.ndarray]:
    wildmeshing = _import("ftetwild")
    diagonal = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
    if wildmeshing.__name__ == "pytetwild":
        try:
            nodes, tets = wildmeshing.tetrahedralize(vertices, faces.astype(np.int32), edge_length_abs=edge_length,
                                                     epsilon=FTETWILD_EPSILON, quiet=True)
        except (RuntimeError, ValueError) as error:
            raise ValueError(f"mesher 'ftetwild' failed: {error}") from None
        return np.asarray(nodes), np.asarray(tets)
    try:
        tetrahedralizer = wildmeshing.Tetrahedralizer(edge_length_r=edge_length / diagonal,
                                                      epsilon=FTETWILD_EPSILON)
        tetrahedralizer.set_log_level(6)
        tetrahedralizer.set_mesh(vertices, faces.astype(np.int32))
        tetrahedralizer.tetrahedralize()
        nodes, tets = tetrahedralizer.get_tet_mesh()[:2]
    except (RuntimeError, ValueError) as error:
        raise ValueError(f"mesher 'ftetwild' failed: {error}") from None
    return np.asarray(nodes), np.asarray(tets)


def _split_in_four(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every triangle split into four at its edge midpoints (shared midpoints merged): the
    surface is unchanged, its edges halve."""
    corners = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    edges, which = np.unique(np.sort(corners, axis=1), axis=0, return_inverse=True)
    middle = len(vertices) + which.reshape(3, -1)  # midpoints of edges 01, 12, 20 per face
    vertices = np.concatenate([vertices, 0.5 * (vertices[edges[:, 0]] + vertices[edges[:, 1]])])
    a, b, c = faces.T
    ab, bc, ca = middle
    faces = np.concatenate([np.stack(t, axis=1) for t in
                            ((a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca))])
    return vertices, faces


def _restore_sigpipe(handler: object) -> None:
    """Puts back the process's SIGPIPE disposition that Python had (``handler``, from
    :func:`signal.getsignal`): Gmsh's initialisation sets it to the default, which ends the
    process at the next write to a closed pipe (a terminated worker's, a dropped socket's)
    where Python expects an error it can raise.  From any thread: the disposition is set
    through the C library when it is to ignore or the default, as Python set it."""
    if handler is None:
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, handler)  # type: ignore[arg-type]
        return
    if handler not in (signal.SIG_IGN, signal.SIG_DFL):
        return  # a Python handler can only be set from the main thread
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.signal.restype = ctypes.c_void_p
        libc.signal(int(signal.SIGPIPE), 1 if handler == signal.SIG_IGN else 0)
    except (OSError, AttributeError):  # no C library to call: leave it
        pass


def _run_gmsh(vertices: np.ndarray, faces: np.ndarray, edge_length: float) -> tuple[np.ndarray, np.ndarray]:
    with _GMSH_LOCK:
        return _run_gmsh_locked(vertices, faces, edge_length)


def _run_gmsh_locked(vertices: np.ndarray, faces: np.ndarray,
                     edge_length: float) -> tuple[np.ndarray, np.ndarray]:
    gmsh = _import("gmsh")
    for _ in range(8):
        edge = vertices[faces[:, 1]] - vertices[faces[:, 0]]
        if np.median(np.linalg.norm(edge, axis=1)) <= _GMSH_REFINE_ABOVE * edge_length:
            break
        vertices, faces = _split_in_four(vertices, faces)
    started = not gmsh.isInitialized()
    if started:
        sigpipe = signal.getsignal(signal.SIGPIPE) if hasattr(signal, "SIGPIPE") else None
        gmsh.initialize(argv=[], readConfigFiles=False, interruptible=False)
        _restore_sigpipe(sigpipe)
    options = {"General.Terminal": 0, "Mesh.MeshSizeMin": edge_length, "Mesh.MeshSizeMax": edge_length,
               "Mesh.MeshSizeFromPoints": 0, "Mesh.MeshSizeExtendFromBoundary": 0, "Mesh.Algorithm3D": 1}
    # a session the caller started keeps its model, options and log afterwards
    previous = None if started else gmsh.model.getCurrent()
    saved = {} if started else {option: gmsh.option.getNumber(option) for option in options}
    added = False
    gmsh.logger.start()
    try:
        for option, value in options.items():
            gmsh.option.setNumber(option, value)
        gmsh.model.add("msprings_fill")
        added = True
        surface = gmsh.model.addDiscreteEntity(2)
        gmsh.model.mesh.addNodes(2, surface, np.arange(1, len(vertices) + 1), vertices.ravel())
        gmsh.model.mesh.addElementsByType(surface, 2, [], (faces + 1).ravel())
        loop = gmsh.model.geo.addSurfaceLoop([surface])
        gmsh.model.geo.addVolume([loop])
        gmsh.model.geo.synchronize()
        gmsh.model.mesh.generate(3)
        tags, coordinates, _ = gmsh.model.mesh.getNodes()
        _, corner_tags = gmsh.model.mesh.getElementsByType(4)
    except Exception as error:  # the Gmsh API raises plain Exception
        said = [line for line in gmsh.logger.get() if "rror" in line] or [str(error)]
        raise ValueError(f"mesher 'gmsh' failed: {'; '.join(said[-3:])}") from None
    finally:
        if started:
            gmsh.logger.stop()
            gmsh.finalize()
        else:
            if added:
                gmsh.model.remove()
            if previous:
                gmsh.model.setCurrent(previous)
            for option, value in saved.items():
                gmsh.option.setNumber(option, value)
    order = np.argsort(tags)
    tets = order[np.searchsorted(tags[order], corner_tags)].reshape(-1, 4)
    return coordinates.reshape(-1, 3), tets


_RUNNERS: dict[str, Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray]]] = {
    "tetgen": _run_tetgen,
    "ftetwild": _run_ftetwild,
    "gmsh": _run_gmsh,
}


# ---- the child process ---------------------------------------------------------------------


def _run_isolated(name: str, vertices: np.ndarray, faces: np.ndarray, edge_length: float,
                  timeout: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Runs the mesher in a child Python process (this file as a script); its exceptions are
    raised again here, a crash, abort or timeout becomes ValueError / TimeoutError."""
    with tempfile.TemporaryDirectory(prefix="msprings-mesher-") as folder:
        request = os.path.join(folder, "request.npz")
        answer = os.path.join(folder, "answer.npz")
        np.savez(request, vertices=vertices, faces=faces, edge_length=edge_length)
        command = [sys.executable, os.path.abspath(__file__), name, request, answer]
        try:
            child = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                                   cwd=folder)  # the files the meshers drop are deleted with it
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"mesher {name!r} did not finish within timeout = {timeout} s") from None
        said = (child.stdout + child.stderr).decode("utf-8", "replace").strip().splitlines()
        quoted = "; ".join(line.strip() for line in said[-_QUOTED_LINES:] if line.strip())
        if child.returncode == 0 and os.path.exists(answer):
            with np.load(answer) as data:
                return data["nodes"], data["tets"]
        error_file = answer + ".json"
        if os.path.exists(error_file):
            with open(error_file, encoding="utf-8") as stream:
                error = json.load(stream)
            kind = {"ImportError": ImportError, "ValueError": ValueError}.get(error["type"])
            if kind is not None:
                raise kind(error["message"])
            raise ValueError(f"mesher {name!r} failed: {error['type']}: {error['message']}")
        if child.returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-child.returncode).name}"
            except ValueError:
                how = f"was killed by signal {-child.returncode}"
        else:
            how = f"exited with status {child.returncode}"
        raise ValueError(f"mesher {name!r} crashed on this input (its process {how}); it said: "
                         f"{quoted or 'nothing'}")


def _child(arguments: list[str]) -> int:
    """Entry point of the child process: ``name request.npz answer.npz``.  Writes the mesh to
    ``answer.npz`` or the exception to ``answer.npz.json``."""
    name, request, answer = arguments
    with np.load(request) as data:
        vertices, faces, edge_length = data["vertices"], data["faces"], float(data["edge_length"])
    try:
        nodes, tets = _RUNNERS[name](vertices, faces, edge_length)
    except Exception as error:  # reported to the caller, which raises it again
        with open(answer + ".json", "w", encoding="utf-8") as stream:
            json.dump({"type": type(error).__name__, "message": str(error)}, stream)
        return 1
    np.savez(answer, nodes=np.asarray(nodes, dtype=np.float64), tets=np.asarray(tets, dtype=np.int64))
    return 0


# ---- the entry point -----------------------------------------------------------------------


def external_mesher(name: str, vertices: np.ndarray, faces: np.ndarray, edge_length: float, *,
                    isolate: bool = True, timeout: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Tetrahedralise a closed surface with a third-party mesher.

    Parameters
    ----------
    name : str
        One of :data:`MESHERS`: ``"tetgen"``, ``"ftetwild"`` or ``"gmsh"`` (see the module
        documentation for what each keeps of the surface and where it fails).
    vertices : array_like, shape (n, 3)
        Surface vertices (m), finite, n >= 4.
    faces : array_like of int, shape (F, 3)
        Triangles as vertex indices, oriented outwards (counter-clockwise seen from outside).
    edge_length : float
        Target tetrahedron edge length (m), > 0 and at most the bounding-box diagonal.
        TetGen gets it as a maximum volume, that of a regular tet of this edge
        (``L^3 / (6 sqrt 2)``), with a radius-edge ratio bound of 1.5; fTetWild as a
        fraction of the bounding-box diagonal; Gmsh as its mesh size.  Edges come out
        within about a factor of two of it (shorter near fine surface detail).
    isolate : bool
        Run the mesher in a child Python process (default), so that a crash or an abort of
        the mesher's library raises an exception here instead of ending the interpreter, and
        its console output is captured.  False runs it in this process (faster by the
        child's start, about 0.1-0.5 s), where fTetWild prints its log and leaves
        ``__tracked_surface.stl``, and TetGen sometimes ``_skipped.node`` / ``_skipped.face``,
        in the current directory; in-process Gmsh calls from several threads take turns (a
        lock), as Gmsh has one global model.
    timeout : float or None
        With ``isolate``, seconds after which the child is killed (TimeoutError); None waits.

    Returns
    -------
    nodes : ndarray of float64, shape (N, 3)
        Node positions (m).  No unused node.
    tets : ndarray of int64, shape (T, 4)
        Tetrahedra as node indices, each positively oriented
        (``det[p1 - p0, p2 - p0, p3 - p0] > 0``), none of zero volume (tets of at most
        1e-12 times a regular tet of ``edge_length`` are dropped).

    Raises
    ------
    ImportError
        The mesher's package is not installed; the message names the pip command.
    ValueError
        A bad argument (named), or the mesher failed on this input (its message is quoted),
        crashed, or (TetGen, Gmsh) filled a volume that differs from the enclosed one by more
        than :data:`EXACT_VOLUME_RTOL` (an open or self-intersecting surface).
    TypeError
        An argument of the wrong type.
    TimeoutError
        The mesher ran longer than ``timeout``.
    """
    name, x, f, length = _check_input(name, vertices, faces, edge_length)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
                                or not timeout > 0):
        raise ValueError(f"timeout must be None or a number of seconds > 0, got {timeout!r}")
    if _backend(name) is None:
        raise _missing(name)
    if isolate:
        nodes, tets = _run_isolated(name, x, f, length, timeout)
    else:
        nodes, tets = _RUNNERS[name](x, f, length)
    return _clean(name, nodes, tets, x, f, length)


if __name__ == "__main__":  # the child process of _run_isolated
    del sys.path[0]  # this folder: its modules must not shadow the meshers' packages
    sys.exit(_child(sys.argv[1:]))
