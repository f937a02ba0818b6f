"""Ready-made scenes: every model of the references in one call.

Each builder returns a new :class:`~msprings.System` with the references' parameters as
defaults; scale and resolution are arguments.  Surfaces carry triangles (``s.faces``) and
texture coordinates (``s.uv``), and ``s.families`` names the springs of each family:

- ``structural``: neighbours along the grid lines (they carry the load);
- ``shear``: the diagonals of each cell (without them a square cell folds into a rhombus
  at no cost, so a cloth shears and a jelly collapses: the references' unstable
  arrangement);
- ``bend`` (flexion): neighbours two apart along the grid lines (they resist folding).

Every family has its own stiffness and damping: pass a number for all of them or a dict such
as ``k={"structural": 2500, "shear": 2500, "bend": 500}``; ``families=("structural",)``
leaves the others out.  All springs start at their rest length.

Conventions: SI units, y up; grids are indexed row-major, node (i, j) = ``i * columns + j``.

Errors, for every builder: ``TypeError`` for a size that is not an integer, or for a keyword
the builder does not take (suggesting the closest, e.g. ``cloth(pinned="corners")``: did you
mean pin=?); ``ValueError`` for a size below the builder's minimum or beyond what the core's
int32 node indices can number, for conflicting values (``mass`` and ``density``, ``c`` and
``damping_ratio``), and for any value the :class:`~msprings.System` it builds refuses.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ._system import System, real_scalar

__all__ = [
    "balloon",
    "chain",
    "cloth",
    "flag",
    "folding_cloth",
    "grid_springs",
    "jelly_cube",
    "lab_spring",
    "lattice_springs",
    "pyramid",
    "single_spring",
    "spring_sphere",
    "tablecloth",
]

FAMILIES = ("structural", "shear", "bend")

Parameter = float | Mapping[str, float]


_Builder = TypeVar("_Builder", bound=Callable[..., Any])


def _keywords(function: Callable[..., Any]) -> set[str]:
    """The keywords ``function`` takes by name (its ``**options`` left out)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name for name, parameter in inspect.signature(function).parameters.items() if parameter.kind in kinds}


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    """'; did you mean pin=?' for the choice closest to ``name``, or '' if none is close: one
    that begins with the other (pin for pinned, youngs_modulus for youngs) before one that is
    only spelt alike (density for densty)."""
    ordered = sorted(choices)
    prefixed = [choice for choice in ordered if min(len(choice), len(name)) >= 3
                and (choice.startswith(name) or name.startswith(choice))]
    close = difflib.get_close_matches(name, prefixed, n=1, cutoff=0.0) or difflib.get_close_matches(
        name, ordered, n=1, cutoff=0.7)
    return f"; did you mean {close[0]}=?" if close else ""


def _checks_keywords(passes_to: str = "System") -> Callable[[_Builder], _Builder]:
    """A scene builder whose keywords are checked by name before it builds anything.

    A builder hands the keywords it does not name itself (``**options``) to ``passes_to``
    (:class:`System`, or :func:`msprings.mesh.from_mesh`, which hands its own on to System).
    A keyword that neither takes is a TypeError that suggests the closest one that is taken
    (``cloth(youngs=...)``: did you mean youngs_modulus=?).  A keyword handed on whose value
    is refused with a TypeError, when it is close to one of the builder's own keywords, is
    most likely that keyword misspelt (``cloth(pinned="corners")`` for ``pin="corners"``):
    the TypeError says so.
    """

    def decorate(builder: _Builder) -> _Builder:
        own = _keywords(builder)

        @functools.wraps(builder)
        def checked(*args: Any, **kwargs: Any) -> Any:
            handed_on = _keywords(System.__init__) - {"positions", "springs", "self"}
            if passes_to == "from_mesh":  # its own keywords and the options it sets on the system
                from .mesh import _springs

                handed_on |= _keywords(_springs.from_mesh) - {"vertices", "faces"}
                handed_on |= set(_springs._SYSTEM_ATTRIBUTES)
            taken = own | handed_on
            for name in kwargs:
                if name not in taken:
                    raise TypeError(f"{builder.__name__}() got an unexpected keyword argument {name!r}"
                                    f"{_did_you_mean(name, taken)}")
            try:
                return builder(*args, **kwargs)
            except TypeError as error:
                for name in kwargs:
                    hint = "" if name in own else _did_you_mean(name, own)
                    if hint and name in str(error):
                        raise TypeError(f"{error}{hint} ({builder.__name__}() takes that itself; {name}= is "
                                        f"handed on to {passes_to})") from None
                raise

        return checked  # type: ignore[return-value]

    return decorate


def _family_value(value: Parameter, family: str, name: str) -> float:
    if isinstance(value, Mapping):
        if family not in value:
            raise ValueError(f"{name} has no value for the {family!r} springs (give a number or a dict with it)")
        return float(value[family])
    return float(value)


def _check_families(families: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(families)
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown spring families {unknown}; choose from {FAMILIES}")
    return chosen


# Nodes are indexed by int32 in the core: a scene holds fewer than 2**31 of them, so a square
# grid has at most 46340 nodes a side and a cube 1290.
_MAX_NODES = 2**31 - 1
_SIDE_2D = math.isqrt(_MAX_NODES)
_SIDE_3D = 1290


def _positive_int(value: int, name: str, minimum: int = 1, maximum: int = _MAX_NODES) -> int:
    """An integer count in [minimum, maximum] (the maximum keeps the node count within int32)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} = {value} must be >= {minimum}")
    if value > maximum:
        shown = value if value.bit_length() < 64 else f"2**{int(value).bit_length() - 1} or more"
        raise ValueError(f"{name} = {shown} is out of range: at most {maximum} (nodes are indexed by int32)")
    return int(value)


def _positive(value: float, name: str) -> float:
    number = real_scalar(value, name)
    if not math.isfinite(number) or number <= 0.0:
        raise ValueError(f"{name} = {value} must be finite and > 0")
    return number


def _non_negative(value: float, name: str) -> float:
    number = real_scalar(value, name)
    if not math.isfinite(number) or number < 0.0:
        raise ValueError(f"{name} = {value} must be finite and >= 0")
    return number


def _finite(value: float, name: str) -> float:
    number = real_scalar(value, name)
    if not math.isfinite(number):
        raise ValueError(f"{name} = {value} must be finite")
    return number


def _critical_damping(mass: float, k: float) -> float:
    """90 % of the critical damping of one node of ``mass`` kg on one spring of ``k`` N/m."""
    return 0.9 * 2.0 * math.sqrt(_non_negative(mass, "mass") * _non_negative(k, "k"))


def grid_springs(rows: int, columns: int, families: Sequence[str] = FAMILIES) -> dict[str, np.ndarray]:
    """Spring index pairs of a rows x columns grid, by family (in the order given).

    Counts: structural ``rows (columns - 1) + columns (rows - 1)``, shear
    ``2 (rows - 1)(columns - 1)``, bend ``rows (columns - 2) + columns (rows - 2)``; for an
    N x N grid ``2N(N-1) + 2(N-1)^2 + 2N(N-2)`` in all.

    Parameters
    ----------
    rows, columns : int
        Grid size in nodes; node (i, j) has index ``i * columns + j``.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).

    Returns
    -------
    dict of str to numpy.ndarray
        For each family, its springs as an (m, 2) int array of node index pairs.

    Raises
    ------
    TypeError
        If ``rows`` or ``columns`` is not an integer.
    ValueError
        If ``rows`` or ``columns`` is below 1 or its grid too large for int32 node indices,
        or ``families`` names an unknown family.
    """
    rows = _positive_int(rows, "rows", 1, _SIDE_2D)
    columns = _positive_int(columns, "columns", 1, _SIDE_2D)
    index = np.arange(rows * columns).reshape(rows, columns)
    pairs: dict[str, np.ndarray] = {}
    for family in _check_families(families):
        if family == "structural":
            parts = [(index[:, :-1], index[:, 1:]), (index[:-1, :], index[1:, :])]
        elif family == "shear":
            parts = [(index[:-1, :-1], index[1:, 1:]), (index[:-1, 1:], index[1:, :-1])]
        else:
            parts = [(index[:, :-2], index[:, 2:]), (index[:-2, :], index[2:, :])]
        pairs[family] = np.concatenate(
            [np.column_stack([a.ravel(), b.ravel()]) for a, b in parts]
        ).reshape(-1, 2)
    return pairs


def lattice_springs(n: int, families: Sequence[str] = FAMILIES) -> dict[str, np.ndarray]:
    """Spring index pairs of an n x n x n lattice, by family.

    structural: the 6 axis neighbours (``3 n^2 (n-1)`` springs); shear: both diagonals of
    every face of every cell (``6 n (n-1)^2``) and the 4 body diagonals of every cell
    (``4 (n-1)^3``); bend: axis neighbours two apart (``3 n^2 (n-2)``).

    Parameters
    ----------
    n : int
        Lattice side in nodes; node (a, b, c) has index ``a n^2 + b n + c``.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).

    Returns
    -------
    dict of str to numpy.ndarray
        For each family, its springs as an (m, 2) int array of node index pairs.

    Raises
    ------
    TypeError
        If ``n`` is not an integer.
    ValueError
        If ``n`` is below 1 or its lattice too large for int32 node indices, or ``families``
        names an unknown family.
    """
    n = _positive_int(n, "n", 1, _SIDE_3D)
    index = np.arange(n**3).reshape(n, n, n)
    full = slice(None)

    def shifted(offset: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        start = tuple(slice(0, n - d) if d > 0 else slice(-d, n) if d < 0 else full for d in offset)
        end = tuple(slice(d, n) if d > 0 else slice(0, n + d) if d < 0 else full for d in offset)
        return index[start].ravel(), index[end].ravel()

    offsets = {
        "structural": [(1, 0, 0), (0, 1, 0), (0, 0, 1)],
        "shear": [(1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1),
                  (1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1)],
        "bend": [(2, 0, 0), (0, 2, 0), (0, 0, 2)],
    }
    pairs: dict[str, np.ndarray] = {}
    for family in _check_families(families):
        parts = [np.column_stack(shifted(offset)) for offset in offsets[family]]
        pairs[family] = np.concatenate(parts).reshape(-1, 2)
    return pairs


def _grid_faces(rows: int, columns: int) -> np.ndarray:
    index = np.arange(rows * columns).reshape(rows, columns)
    a, b = index[:-1, :-1].ravel(), index[:-1, 1:].ravel()
    c, d = index[1:, :-1].ravel(), index[1:, 1:].ravel()
    return np.concatenate([np.column_stack([a, c, b]), np.column_stack([b, c, d])])


def _grid_uv(rows: int, columns: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij")
    return np.column_stack([j.ravel() / max(columns - 1, 1), i.ravel() / max(rows - 1, 1)])


def _assemble(positions: np.ndarray, pairs: Mapping[str, np.ndarray], k: Parameter, c: Parameter,
              **options: Any) -> System:
    """Builds a System from families of springs with per-family k and c (a number per family,
    or for k also an array with one value per spring of the family)."""
    names = list(pairs)
    springs = np.concatenate([pairs[name] for name in names]) if names else np.zeros((0, 2), dtype=np.int64)

    def per_spring(value: Any, name: str, what: str) -> np.ndarray:
        given = value.get(name) if isinstance(value, Mapping) else None
        if isinstance(given, np.ndarray):
            return given
        return np.full(len(pairs[name]), _family_value(value, name, what))

    stiffness = np.concatenate([per_spring(k, name, "k") for name in names]) if names else np.zeros(0)
    damping = np.concatenate([per_spring(c, name, "c") for name in names]) if names else np.zeros(0)
    system = System(positions, springs, k=stiffness, c=damping, **options)
    start = 0
    for name in names:
        system.families[name] = np.arange(start, start + len(pairs[name]))
        start += len(pairs[name])
    return system


def _membrane_grid(rows: int, columns: int, spacing: float, pairs: Mapping[str, np.ndarray], thickness: float,
                   density: float | None, youngs_modulus: float | None) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
    """Node masses (kg) and structural and shear stiffnesses (N/m) of a grid membrane.

    Every square cell of side h weighs rho t h^2, a quarter to each corner.  Every cell gives
    each of its four sides and each of its two diagonals 3/8 E t, so a side inside the grid
    has k = 3/4 E t, one on the rim 3/8 E t, a diagonal 3/8 E t.  A square lattice whose
    diagonals are half as stiff as its sides is an isotropic membrane: per unit area
    C11 = k_side + k_diagonal, C12 = C66 = k_diagonal, so C66 = (C11 - C12) / 2 when
    k_diagonal = k_side / 2; its Poisson's ratio is C12 / C11 = 1/3 and its Young's modulus
    C11 (1 - 1/9) = 4/3 k_side = E.
    """
    mass = None
    if density is not None:
        cell = density * thickness * spacing * spacing / 4.0
        corners = np.zeros((rows, columns))
        corners[:-1, :-1] += cell
        corners[1:, :-1] += cell
        corners[:-1, 1:] += cell
        corners[1:, 1:] += cell
        mass = corners.ravel()
    stiffness: dict[str, np.ndarray] = {}
    if youngs_modulus is not None:
        share = 0.375 * youngs_modulus * thickness
        for family in ("structural", "shear"):
            if family not in pairs:
                continue
            springs = pairs[family]
            if family == "shear":
                stiffness[family] = np.full(len(springs), share)
                continue
            row, column = springs // columns, springs % columns
            along_row = row[:, 0] == row[:, 1]
            rim = np.where(along_row, np.isin(row[:, 0], (0, rows - 1)), np.isin(column[:, 0], (0, columns - 1)))
            stiffness[family] = np.where(rim, share, 2.0 * share)
    return mass, stiffness


def _material_keywords(density: float | None, thickness: float | None, youngs_modulus: float | None,
                       damping_ratio: float | None, mass: Any, c: Any, surface: bool = True) -> None:
    """Checks a scene's material values: each finite and > 0 (the ratio >= 0), for a
    ``surface`` a thickness with a density or modulus, and no mass beside a density or c
    beside a damping ratio."""
    for value, name in ((density, "density"), (thickness, "thickness"), (youngs_modulus, "youngs_modulus")):
        if value is not None:
            _positive(value, name)
    if damping_ratio is not None:
        ratio = real_scalar(damping_ratio, "damping_ratio")
        if not (math.isfinite(ratio) and ratio >= 0.0):
            raise ValueError(f"damping_ratio = {damping_ratio} must be finite and >= 0")
    if surface and (density is not None or youngs_modulus is not None) and thickness is None:
        raise ValueError("density and youngs_modulus need the membrane's thickness (m)")
    if density is not None and mass is not None:
        raise ValueError("give mass or density, not both")
    if damping_ratio is not None and c is not None:
        raise ValueError("give c or damping_ratio, not both")


def _default_ratio(damping_ratio: float | None, c: Any, density: float | None, youngs_modulus: float | None,
                   reference: tuple[float, float, float]) -> float | None:
    """The damping ratio a membrane builder uses: ``damping_ratio`` if given; else, with
    material values and no ``c``, the ratio of the builder's reference spring (``reference``
    = its default c (N s/m), k (N/m) and node mass (kg)), c / (2 sqrt(k m / 2)) for two free
    nodes, so a material membrane is damped as the reference one is whatever it weighs
    (fixed dampers would overdamp a light fabric); else None (the dampers are ``c``)."""
    if damping_ratio is not None or c is not None or (density is None and youngs_modulus is None):
        return damping_ratio
    damping, stiffness, mass = reference
    return damping / (2.0 * math.sqrt(stiffness * mass / 2.0))


def _material_assemble(positions: np.ndarray, pairs: Mapping[str, np.ndarray], k: Parameter, c: Parameter,
                       mass: Any, lumped: np.ndarray | None, material_k: Mapping[str, np.ndarray],
                       damping_ratio: float | None, **options: Any) -> System:
    """:func:`_assemble` with material values where given: the ``lumped`` node masses (kg)
    instead of ``mass``, the ``material_k`` stiffnesses (N/m, an array per family) instead of
    ``k`` for the families they cover, and ``c = 2 zeta sqrt(k mu)`` for a ``damping_ratio``
    instead of ``c``."""
    stiffness: Parameter | dict[str, Any] = k
    if material_k:
        stiffness = {family: material_k[family] if family in material_k else _family_value(k, family, "k")
                     for family in pairs}
    system = _assemble(positions, pairs, stiffness, 0.0 if damping_ratio is not None else c,
                       mass=mass if lumped is None else lumped, **options)
    if damping_ratio is not None:
        system.c[:] = system.damping_for_ratio(damping_ratio)
    return system


@_checks_keywords()
def single_spring(length: float = 1.0, *, mass: float = 1.0, k: float = 20.0, c: float = 0.3,
                  stretch: float = 0.0, **options: Any) -> System:
    """The references' single spring: node 0 pinned at the origin, node 1 ``length`` m away
    along x (displaced by ``stretch`` m), mass 1 kg, k = 20 N/m, c = 0.3 N s/m, gravity on.

    Parameters
    ----------
    length : float, default 1.0
        Rest length (m), > 0.
    mass : float, default 1.0
        Mass of each node (kg).
    k : float, default 20.0
        Stiffness (N/m).
    c : float, default 0.3
        Damping (N s/m).
    stretch : float, default 0.0
        Initial extension of the spring (m).
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite.
    """
    length = _positive(length, "length")
    positions = np.array([[0.0, 0.0, 0.0], [length + float(stretch), 0.0, 0.0]])
    options.setdefault("pinned", [0])
    system = System(positions, [[0, 1]], mass=mass, k=k, c=c, rest=length, **options)
    system.families["structural"] = np.array([0])
    return system


@_checks_keywords()
def lab_spring(length: float = 0.3, *, mass: float = 0.1, k: float = 10.0, c: float = 0.01, stretch: float = 0.0,
               **options: Any) -> System:
    """A lab spring hanging from a stand, as on a school bench: node 0 pinned at the origin,
    the mass (node 1) ``length`` m straight below it (pulled ``stretch`` m further down), a
    100 g mass on a 10 N/m spring of 30 cm, lightly damped (c = 0.01 N s/m, damping ratio
    0.005).  Let go at rest length, it bounces about its equilibrium ``m g / k`` = 9.8 cm
    lower with that amplitude and a period ``2 pi sqrt(m / k)`` = 0.63 s.

    Parameters
    ----------
    length : float, default 0.3
        Rest length (m), > 0.
    mass : float, default 0.1
        Mass of each node (kg).
    k : float, default 10.0
        Stiffness (N/m).
    c : float, default 0.01
        Damping (N s/m).
    stretch : float, default 0.0
        Initial extension of the spring, downwards (m).
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite.
    """
    length = _positive(length, "length")
    positions = np.array([[0.0, 0.0, 0.0], [0.0, -(length + float(stretch)), 0.0]])
    options.setdefault("pinned", [0])
    system = System(positions, [[0, 1]], mass=mass, k=k, c=c, rest=length, **options)
    system.families["structural"] = np.array([0])
    return system


@_checks_keywords()
def chain(n: int = 11, spacing: float = 1.0, *, mass: float = 1.0, k: float = 5000.0, c: float = 5.0,
          anchor: str | None = "start", direction: ArrayLike = (1.0, 0.0, 0.0), **options: Any) -> System:
    """A string of ``n`` nodes ``spacing`` m apart along ``direction`` from the origin, joined
    by neighbour springs: 11 nodes of 1 kg on springs of k = 5000 N/m, c = 5 N s/m (damping
    ratio 0.05 between two nodes).  Let go level, it swings down and hangs with its top spring
    stretched 2 % (the weight of ten nodes, 98 N, on 5000 N/m) and a little more while it swings.
    The references' chain (k = 20 N/m, c = 0.3 N s/m) is ``chain(k=20.0, c=0.3)``: its 1 kg
    nodes stretch those soft springs by up to eleven times their length.

    ``anchor`` pins ``"start"`` (node 0), ``"end"``, ``"both"`` ends, the ``"middle"`` node,
    or nothing (None); ``pinned=`` overrides it.

    Parameters
    ----------
    n : int, default 11
        Number of nodes (>= 2).
    spacing : float, default 1.0
        Rest length of each spring (m), > 0.
    mass : float, default 1.0
        Mass of each node (kg).
    k : float, default 5000.0
        Stiffness (N/m).
    c : float, default 5.0
        Damping (N s/m).
    anchor : {"start", "end", "both", "middle", None}, default "start"
        Which nodes are pinned.
    direction : array_like, shape (3,), default (1, 0, 0)
        Direction of the chain from the origin (normalised; non-zero).
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``direction`` is not a non-zero 3-vector or ``anchor`` is not one of its
        choices.
    """
    n = _positive_int(n, "n", 2)
    spacing = _positive(spacing, "spacing")
    axis = np.asarray(direction, dtype=np.float64)
    if axis.shape != (3,) or not np.linalg.norm(axis) > 0:
        raise ValueError("direction must be a non-zero 3-vector")
    axis = axis / np.linalg.norm(axis)
    anchors = {"start": [0], "end": [n - 1], "both": [0, n - 1], "middle": [n // 2], None: None}
    if anchor not in anchors:
        raise ValueError(f"anchor must be one of 'start', 'end', 'both', 'middle' or None, not {anchor!r}")
    options.setdefault("pinned", anchors[anchor])
    positions = np.arange(n)[:, None] * spacing * axis
    pairs = {"structural": np.column_stack([np.arange(n - 1), np.arange(1, n)])}
    return _assemble(positions, pairs, k, c, mass=mass, **options)


@_checks_keywords()
def cloth(n: int = 40, columns: int | None = None, *, size: float = 25.0, mass: float | None = None,
          k: Parameter = 2500.0, c: Parameter | None = None, families: Sequence[str] = FAMILIES,
          pin: str | Sequence[int] | None = "corners", density: float | None = None,
          thickness: float | None = None, youngs_modulus: float | None = None,
          damping_ratio: float | None = None, **options: Any) -> System:
    """A hanging cloth: ``n`` rows by ``columns`` (default n) nodes, ``size`` m along its rows
    (node spacing ``size / n``: the references' 40 x 40 cloth of 25 m, 0.625 m apart), lying
    flat in the y = 0 plane, node (i, j) at ``(j h, 0, i h)``; 1 kg nodes, k = 2500 N/m,
    c = 1 N s/m; released under gravity it falls and hangs from its pins.

    ``pin``: ``"corners"`` (nodes (0, 0) and (0, columns - 1)), ``"top"`` (all of row 0), a
    list of node indices, or None; ``pinned=`` overrides it.

    Material values make the cloth behave the same at every ``n`` (for a fixed ``size``):
    ``density`` (kg/m^3) with ``thickness`` t (m) lumps each cell's mass rho t h^2 onto its
    corners (instead of ``mass``); ``youngs_modulus`` E (Pa) gives the structural springs
    3/4 E t inside and 3/8 E t on the rim and the shear springs 3/8 E t, which makes the
    grid an isotropic membrane of modulus E and Poisson's ratio 1/3 (``k`` then sets only
    the bend springs); ``damping_ratio`` zeta gives every spring ``c = 2 zeta sqrt(k mu)``
    (instead of ``c``), as :func:`msprings.mesh.from_mesh` does.  With material values and
    neither ``c`` nor ``damping_ratio``, zeta is the default cloth's 0.014 (1 N s/m between
    1 kg nodes at 2500 N/m).

    Parameters
    ----------
    n : int, default 40
        Rows of nodes (>= 2).
    columns : int, optional
        Columns of nodes (>= 2); default ``n``.
    size : float, default 25.0
        Length along a row (m), > 0.
    mass : float, optional
        Mass of each node (kg); default 1.0.
    k : float or dict of str to float, default 2500.0
        Spring stiffness (N/m), one number or one per family.
    c : float or dict of str to float, optional
        Spring damping (N s/m), one number or one per family; default 1.0.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).
    pin : {"corners", "top"} or sequence of int or None, default "corners"
        Which nodes are pinned.
    density : float, optional
        Membrane material density (kg/m^3), with ``thickness``, instead of ``mass``.
    thickness : float, optional
        Membrane thickness (m), needed by ``density`` and ``youngs_modulus``.
    youngs_modulus : float, optional
        Young's modulus (Pa) of the membrane, with ``thickness``; sets the structural and
        shear springs.
    damping_ratio : float, optional
        Damping ratio of every spring (dimensionless, >= 0), instead of ``c``.
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``pin`` is an unknown string, an unknown family is named, ``k`` or ``c`` is a
        dict without a value for a built family, both ``mass`` and ``density`` or both
        ``c`` and ``damping_ratio`` are given, or ``density`` or ``youngs_modulus`` is
        given without ``thickness``.
    """
    rows = _positive_int(n, "n", 2, _SIDE_2D)
    columns = rows if columns is None else _positive_int(columns, "columns", 2, _SIDE_2D)
    spacing = _positive(size, "size") / rows
    _material_keywords(density, thickness, youngs_modulus, damping_ratio, mass, c)
    i, j = np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij")
    positions = np.column_stack([j.ravel() * spacing, np.zeros(rows * columns), i.ravel() * spacing])
    if isinstance(pin, str):
        pins = {"corners": [0, columns - 1], "top": list(range(columns))}
        if pin not in pins:
            raise ValueError(f"pin must be 'corners', 'top', a list of node indices or None, not {pin!r}")
        pinned: Any = pins[pin]
    else:
        pinned = pin
    options.setdefault("pinned", pinned)
    pairs = grid_springs(rows, columns, families)
    lumped, material_k = _membrane_grid(rows, columns, spacing, pairs, thickness or 0.0, density, youngs_modulus)
    damping_ratio = _default_ratio(damping_ratio, c, density, youngs_modulus, (1.0, 2500.0, 1.0))
    return _material_assemble(positions, pairs, k, 1.0 if c is None else c, 1.0 if mass is None else mass,
                              lumped, material_k, damping_ratio, faces=_grid_faces(rows, columns),
                              uv=_grid_uv(rows, columns), **options)


@_checks_keywords()
def flag(rows: int = 20, columns: int = 30, *, width: float = 3.0, mass: float | None = None,
         k: Parameter = 2500.0, c: Parameter | None = None, families: Sequence[str] = FAMILIES, gust: float = 6.0,
         wind: ArrayLike = (2.0, 0.0, 0.0), drag_coefficient: float = 1.0, lift_coefficient: float = 0.2,
         density: float | None = None, thickness: float | None = None, youngs_modulus: float | None = None,
         damping_ratio: float | None = None, **options: Any) -> System:
    """A flag in gusty wind: ``rows`` x ``columns`` nodes in the vertical x-y plane, ``width``
    m long in x (square cells), pinned along its left edge (x = 0) to a pole, 0.02 kg nodes,
    k = 2500 N/m, c = 0.7 N s/m; the air (rho = 1.2 kg/m^3, C_d, C_l) blows with a uniform
    ``wind`` plus the flag reference's gust field of amplitude ``gust`` (m/s), so it streams
    and flaps.

    Material values make the same membrane as :func:`cloth`'s: ``density`` (kg/m^3) with
    ``thickness`` t (m) instead of ``mass`` (the flag weighs rho t times its area),
    ``youngs_modulus`` E (Pa) instead of ``k`` for the structural and shear springs (an
    isotropic membrane of modulus E and Poisson's ratio 1/3), ``damping_ratio`` instead of
    ``c`` (with material values and neither, the default flag's 0.07: 0.7 N s/m between
    0.02 kg nodes at 2500 N/m).

    Parameters
    ----------
    rows : int, default 20
        Rows of nodes (>= 2).
    columns : int, default 30
        Columns of nodes (>= 2).
    width : float, default 3.0
        Length along x (m), > 0.
    mass : float, optional
        Mass of each node (kg); default 0.02.
    k : float or dict of str to float, default 2500.0
        Spring stiffness (N/m), one number or one per family.
    c : float or dict of str to float, optional
        Spring damping (N s/m), one number or one per family; default 0.7.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).
    gust : float, default 6.0
        Amplitude of the gust field (m/s).
    wind : array_like, shape (3,), default (2, 0, 0)
        Uniform wind velocity (m/s).
    drag_coefficient : float, default 1.0
        Aerodynamic drag coefficient C_d (dimensionless).
    lift_coefficient : float, default 0.2
        Aerodynamic lift coefficient C_l (dimensionless).
    density : float, optional
        Membrane material density (kg/m^3), with ``thickness``, instead of ``mass``.
    thickness : float, optional
        Membrane thickness (m), needed by ``density`` and ``youngs_modulus``.
    youngs_modulus : float, optional
        Young's modulus (Pa) of the membrane, with ``thickness``; sets the structural and
        shear springs.
    damping_ratio : float, optional
        Damping ratio of every spring (dimensionless, >= 0), instead of ``c``.
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``wind`` is not a 3-vector, an unknown family is named, ``k`` or ``c`` is a dict
        without a value for a built family, both ``mass`` and ``density`` or both ``c``
        and ``damping_ratio`` are given, or ``density`` or ``youngs_modulus`` is given
        without ``thickness``.
    """
    rows = _positive_int(rows, "rows", 2, _SIDE_2D)
    columns = _positive_int(columns, "columns", 2, _SIDE_2D)
    spacing = _positive(width, "width") / (columns - 1)
    _material_keywords(density, thickness, youngs_modulus, damping_ratio, mass, c)
    i, j = np.meshgrid(np.arange(rows), np.arange(columns), indexing="ij")
    positions = np.column_stack([j.ravel() * spacing, -i.ravel() * spacing, np.zeros(rows * columns)])
    options.setdefault("pinned", list(range(0, rows * columns, columns)))
    pairs = grid_springs(rows, columns, families)
    lumped, material_k = _membrane_grid(rows, columns, spacing, pairs, thickness or 0.0, density, youngs_modulus)
    damping_ratio = _default_ratio(damping_ratio, c, density, youngs_modulus, (0.7, 2500.0, 0.02))
    system = _material_assemble(positions, pairs, k, 0.7 if c is None else c, 0.02 if mass is None else mass,
                                lumped, material_k, damping_ratio, faces=_grid_faces(rows, columns),
                                uv=_grid_uv(rows, columns), **options)
    system.drag_coefficient = drag_coefficient
    system.lift_coefficient = lift_coefficient
    system.wind = wind
    system.gust = gust
    return system


@_checks_keywords()
def tablecloth(n: int = 40, *, size: float = 25.0, height: float = 1.0, mass: float | None = None,
               k: Parameter = 3000.0, c: Parameter | None = None, families: Sequence[str] = FAMILIES,
               table_radius: float | None = None, table_height: float = 10.0, friction: float = 0.3,
               thickness: float | None = None, density: float | None = None, youngs_modulus: float | None = None,
               damping_ratio: float | None = None, **options: Any) -> System:
    """A square tablecloth of ``n`` x ``n`` nodes and side ``size`` m, held flat ``height`` m
    above a round table and let go: it falls, drapes over the table and hangs down its
    sides.  The table is a capped cylinder of radius ``0.7 * size / 2`` (the references'
    0.7 x half-width) whose top is at ``table_height``, standing on a ground plane.  The
    references' scale and parameters: 25 m cloth, 3 kg nodes, k = 3000 N/m, c = 8 N s/m.
    Contacts use ``friction`` and the cloth's ``thickness`` (m; default a tenth of the node
    spacing).

    Material values make the same membrane as :func:`cloth`'s: ``density`` (kg/m^3) with the
    ``thickness`` t instead of ``mass`` (the cloth weighs rho t size^2), ``youngs_modulus`` E
    (Pa) instead of ``k`` for the structural and shear springs (an isotropic membrane of
    modulus E and Poisson's ratio 1/3), ``damping_ratio`` instead of ``c`` (with material
    values and neither, the default tablecloth's 0.06: 8 N s/m between 3 kg nodes at
    3000 N/m).

    Parameters
    ----------
    n : int, default 40
        Nodes along each side (>= 2).
    size : float, default 25.0
        Side length (m), > 0.
    height : float, default 1.0
        Initial height of the cloth above the table top (m).
    mass : float, optional
        Mass of each node (kg); default 3.0.
    k : float or dict of str to float, default 3000.0
        Spring stiffness (N/m), one number or one per family.
    c : float or dict of str to float, optional
        Spring damping (N s/m), one number or one per family; default 8.0.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).
    table_radius : float, optional
        Radius of the table (m); default ``0.7 * size / 2``.
    table_height : float, default 10.0
        Height of the table top above the ground (m).
    friction : float, default 0.3
        Coulomb friction coefficient of the contacts (dimensionless, >= 0).
    thickness : float, optional
        Cloth thickness (m): contact distance, and with ``density`` and
        ``youngs_modulus`` the membrane thickness; default a tenth of the node spacing.
    density : float, optional
        Material density (kg/m^3), with ``thickness``, instead of ``mass``.
    youngs_modulus : float, optional
        Young's modulus (Pa), with ``thickness``; sets the structural and shear springs.
    damping_ratio : float, optional
        Damping ratio of every spring (dimensionless, >= 0), instead of ``c``.
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``friction`` is negative, an unknown family is named, ``k`` or ``c`` is a dict
        without a value for a built family, both ``mass`` and ``density`` or both ``c``
        and ``damping_ratio`` are given, or ``density`` or ``youngs_modulus`` is given
        without ``thickness``.
    """
    n = _positive_int(n, "n", 2, _SIDE_2D)
    size = _positive(size, "size")
    spacing = size / (n - 1)
    radius = 0.7 * size / 2.0 if table_radius is None else _positive(table_radius, "table_radius")
    table_height = _positive(table_height, "table_height")
    # A thickness for contacts alone may be 0 (as before material values); a material one is > 0.
    material = density is not None or youngs_modulus is not None
    _material_keywords(density, thickness if material else None, youngs_modulus, damping_ratio, mass, c)
    gap = spacing / 10.0 if thickness is None else float(thickness)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    positions = np.column_stack([
        j.ravel() * spacing - size / 2.0,
        np.full(n * n, table_height + float(height)),
        i.ravel() * spacing - size / 2.0,
    ])
    pairs = grid_springs(n, n, families)
    lumped, material_k = _membrane_grid(n, n, spacing, pairs, gap, density, youngs_modulus)
    damping_ratio = _default_ratio(damping_ratio, c, density, youngs_modulus, (8.0, 3000.0, 3.0))
    system = _material_assemble(positions, pairs, k, 8.0 if c is None else c, 3.0 if mass is None else mass,
                                lumped, material_k, damping_ratio, faces=_grid_faces(n, n), uv=_grid_uv(n, n),
                                **options)
    system.add_cylinder((0.0, table_height / 2.0, 0.0), radius, table_height, friction=friction, thickness=gap)
    system.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=friction, thickness=gap)
    return system


@_checks_keywords()
def folding_cloth(n: int = 24, *, size: float = 0.8, height: float = 0.05, ripple: float = 0.01,
                  pin: str | None = None, density: float = 300.0, thickness: float = 1e-3,
                  youngs_modulus: float = 2e5, damping_ratio: float = 0.1, k: float | None = None,
                  friction: float = 0.5, self_collision: float | None = None, self_friction: float = 0.3,
                  **options: Any) -> System:
    """A square cloth that folds and piles up on the ground without passing through itself.

    ``n`` x ``n`` nodes, ``size`` m square (node spacing h = ``size / (n - 1)``), hung
    vertically in the x-y plane with its lower edge ``height`` m above a ground plane at y = 0
    (Coulomb ``friction``), rippled ``ripple`` x ``size`` out of its plane (a sine of 0.4 x
    ``size`` across and 0.7 x ``size`` down) so it buckles the way real fabric does.  Released
    (``pin=None``) it drops onto the ground and piles up in folds; ``pin="top"`` holds its
    upper edge, so it hangs and its lower part folds onto the ground.

    The material is a light fabric: ``density`` rho = 300 kg/m^3, ``thickness`` t = 1 mm,
    ``youngs_modulus`` E = 0.2 MPa (the membrane of :func:`cloth`: structural springs 3/4 E t
    inside, 3/8 E t on the rim, shear 3/8 E t; ``k`` (N/m) sets the bend springs, by default
    as stiff as the shear ones, so it folds freely) and ``damping_ratio`` zeta = 0.1.  Self-contact keeps the
    layers ``self_collision`` m apart (default 0.4 h) with Coulomb friction ``self_friction``
    between them, and sweeps every step (``self_contact_sweep = 1``), so the folds never pass
    through each other.  The integrator is implicit Euler with at most 4 Newton iterations a
    step, stable at large steps such as 1/60 s; ``integrator=`` overrides it.

    Parameters
    ----------
    n : int, optional
        Nodes along each side, at least 3 (default 24).
    size : float, optional
        Side of the square (m, > 0; default 0.8).
    height : float, optional
        Height of the lower edge above the ground (m, >= 0; default 0.05).
    ripple : float, optional
        Out-of-plane ripple's amplitude as a share of ``size`` (0 to 0.1; default 0.01).
    pin : {None, "top"}, optional
        None (default) drops the cloth; ``"top"`` pins its upper edge.
    density : float, optional
        Fabric density (kg/m^3, > 0; default 300).
    thickness : float, optional
        Fabric thickness (m, > 0; default 1e-3).
    youngs_modulus : float, optional
        Young's modulus of the membrane (Pa, > 0; default 2e5).
    damping_ratio : float, optional
        Damping ratio of every spring (>= 0; default 0.1).
    k : float or None, optional
        Stiffness of the bend springs (N/m, > 0); None (default) makes them as stiff as the
        shear springs, 3/8 E t.
    friction : float, optional
        Coulomb friction coefficient of the ground (>= 0; default 0.5).
    self_collision : float or None, optional
        Distance the layers are kept apart (m, > 0 and at most half the node spacing); None
        (default) is 0.4 x the node spacing.
    self_friction : float, optional
        Coulomb friction coefficient between layers (>= 0; default 0.3).
    **options
        Further :class:`System` keywords (``integrator``, ``pinned``, ``gravity``, ...).

    Returns
    -------
    System
        The cloth, n * n nodes, with its faces, a ground plane and self-contact on.

    Raises
    ------
    ValueError
        If ``n`` is below 3, a size, height, material value or friction is out of its range or
        not finite, ``ripple`` is outside [0, 0.1], ``pin`` is not None or ``"top"``, or
        ``self_collision`` is not in (0, half the node spacing].
    TypeError
        If a numeric argument is not a real number, or ``options`` holds an unknown keyword.
    """
    n = _positive_int(n, "n", 3, _SIDE_2D)
    size = _positive(size, "size")
    spacing = size / (n - 1)
    height = real_scalar(height, "height")
    if not (math.isfinite(height) and height >= 0.0):
        raise ValueError(f"height = {height} must be finite and >= 0 (m above the ground)")
    ripple = real_scalar(ripple, "ripple")
    if not (math.isfinite(ripple) and 0.0 <= ripple <= 0.1):
        raise ValueError(f"ripple = {ripple} must be between 0 and 0.1 (a share of size)")
    if pin not in (None, "top"):
        raise ValueError(f"pin must be 'top' or None, not {pin!r}")
    _material_keywords(density, thickness, youngs_modulus, damping_ratio, None, None)
    friction = real_scalar(friction, "friction")
    self_friction = real_scalar(self_friction, "self_friction")
    distance = 0.4 * spacing if self_collision is None else real_scalar(self_collision, "self_collision")
    if not (math.isfinite(distance) and 0.0 < distance <= 0.5 * spacing):
        raise ValueError(f"self_collision = {self_collision} must be > 0 and at most half the node spacing "
                         f"({0.5 * spacing:g} m)")
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    across, down = j.ravel() * spacing, i.ravel() * spacing
    y = height + size - down
    positions = np.column_stack([
        across,
        y,
        ripple * size * np.sin(2.0 * np.pi * across / (0.4 * size)) * np.sin(2.0 * np.pi * (y - height) / (0.7 * size)),
    ])
    options.setdefault("integrator", "implicit_euler")
    options.setdefault("pinned", list(range(n)) if pin == "top" else None)
    pairs = grid_springs(n, n, FAMILIES)
    lumped, material_k = _membrane_grid(n, n, spacing, pairs, thickness, density, youngs_modulus)
    bend = 0.375 * youngs_modulus * thickness if k is None else _positive(k, "k")
    system = _material_assemble(positions, pairs, bend, 0.0, None, lumped, material_k, damping_ratio,
                                faces=_grid_faces(n, n), uv=_grid_uv(n, n), **options)
    system.newton_max_iter = 4
    system.add_plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0), friction=friction)
    system.self_collision = distance
    system.self_friction = self_friction
    system.self_contact_sweep = 1
    return system


@_checks_keywords()
def jelly_cube(n: int = 10, *, size: float = 1.0, mass: float | None = None, k: Parameter = 150.0,
               c: Parameter | None = None, families: Sequence[str] = FAMILIES, height: float = 0.5,
               ground: bool = True, restitution: float = 0.0, friction: float = 0.5, density: float | None = None,
               youngs_modulus: float | None = None, damping_ratio: float | None = None, **options: Any) -> System:
    """A jelly cube: an ``n`` x ``n`` x ``n`` lattice of side ``size`` m with structural,
    shear (face and body diagonals) and bend springs, its lowest face ``height`` m above a
    ground plane (``ground=False`` leaves the plane out).  The references' jelly: 10^3 nodes
    of 0.5 kg, k = 150 N/m and ``c = 0.9 * 2 sqrt(m k)`` (90 % of critical) by default.
    The cube's surface triangles are its faces.

    Material values make the cube behave the same at every ``n`` (for a fixed ``size``):
    ``density`` (kg/m^3) lumps each cell's mass rho h^3 (h = size / (n - 1)) onto its eight
    corners (instead of ``mass``; the cube weighs rho size^3).  ``youngs_modulus`` E (Pa)
    gives the sides k1 = 3/5 E h, the face diagonals k2 = 1/5 E h and the body diagonals
    k3 = 3/20 E h inside the lattice (on its faces and edges, the shares of the cells that
    are not there are left out).  A lattice of such springs has C11 = (k1 + 2 k2 + 4/3 k3) / h
    and C12 = C44 = (k2 + 4/3 k3) / h, so these make it an isotropic solid of modulus E and
    Poisson's ratio 1/4, the only ratio central springs allow (M. Kot, H. Nagahashi and
    P. Szymczak, "Elastic moduli of simple mass spring models", The Visual Computer 31,
    2015); the derivation is beside the code.  ``k`` then sets only the bend springs, which
    stiffen the cube along its axes: leave them out with ``families=`` or keep their ``k``
    small beside E h.  ``damping_ratio`` zeta gives every spring ``c = 2 zeta sqrt(k mu)``
    (instead of ``c``; 0.9 with material values and neither given).

    Parameters
    ----------
    n : int, default 10
        Nodes along each edge (>= 2).
    size : float, default 1.0
        Edge length (m), > 0.
    mass : float, optional
        Mass of each node (kg); default 0.5.
    k : float or dict of str to float, default 150.0
        Spring stiffness (N/m), one number or one per family.
    c : float or dict of str to float, optional
        Spring damping (N s/m), one number or one per family; default ``0.9 * 2 sqrt(m k)``.
    families : sequence of str, default FAMILIES
        Spring families to build, from :data:`FAMILIES` (``"structural"``, ``"shear"``,
        ``"bend"``).
    height : float, default 0.5
        Height of the lowest face above the ground (m).
    ground : bool, default True
        Whether to add the ground plane.
    restitution : float, default 0.0
        Restitution of the ground contact (dimensionless, in [0, 1]).
    friction : float, default 0.5
        Friction coefficient of the ground contact (dimensionless, >= 0).
    density : float, optional
        Material density (kg/m^3), instead of ``mass``.
    youngs_modulus : float, optional
        Young's modulus (Pa); sets the structural and shear springs.
    damping_ratio : float, optional
        Damping ratio of every spring (dimensionless, >= 0), instead of ``c``.
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``restitution`` or ``friction`` is out of range, an unknown family is named,
        ``k`` or ``c`` is a dict without a value for a built family, or both ``mass``
        and ``density`` or both ``c`` and ``damping_ratio`` are given.
    """
    n = _positive_int(n, "n", 2, _SIDE_3D)
    size = _positive(size, "size")
    spacing = size / (n - 1)
    _material_keywords(density, None, youngs_modulus, damping_ratio, mass, c, surface=False)
    mass = 0.5 if mass is None else mass
    if c is None and damping_ratio is None:
        if density is None and youngs_modulus is None:
            c = {family: _critical_damping(mass, _family_value(k, family, "k")) for family in FAMILIES}
        else:
            damping_ratio = 0.9
    a, b, d = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    positions = np.column_stack([a.ravel(), b.ravel(), d.ravel()]) * spacing
    positions += (-size / 2.0, float(height), -size / 2.0)
    pairs = lattice_springs(n, families)
    lumped, material_k = _lattice_material(n, spacing, pairs, density, youngs_modulus)
    system = _material_assemble(positions, pairs, k, 0.0 if c is None else c, mass, lumped, material_k,
                                damping_ratio, faces=_lattice_faces(n, positions), **options)
    if ground:
        system.add_plane(restitution=restitution, friction=friction)
    return system


def _lattice_material(n: int, spacing: float, pairs: Mapping[str, np.ndarray], density: float | None,
                      youngs_modulus: float | None) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
    """Node masses (kg) and structural and shear stiffnesses (N/m) of an n^3 lattice solid.

    Every cubic cell of side h weighs rho h^3, an eighth to each corner.

    A spring of stiffness k and rest length L along the unit vector u stores
    (1/2) k L^2 (u . e u)^2 under a small uniform strain e, so a lattice has the elastic
    constants C_ijkl = sum k L^2 u_i u_j u_k u_l / h^3, summed over the springs of one cell's
    worth of lattice.  With sides k1, face diagonals k2 and body diagonals k3 (their values
    inside the lattice):

        C11 = (k1 + 2 k2 + 4/3 k3) / h,    C12 = C44 = (k2 + 4/3 k3) / h.

    Central springs between nodes that are centres of symmetry obey Cauchy's relation
    C12 = C44, so the lattice can only be an isotropic solid with Lame's lambda = mu, Poisson's
    ratio 1/4 and E = 5/2 mu (M. Kot, H. Nagahashi and P. Szymczak, "Elastic moduli of simple
    mass spring models", The Visual Computer 31, 2015, analyse these lattices; A. Lloyd,
    G. Szekely and M. Harders, "Identification of spring parameters for deformable object
    simulation", IEEE TVCG 13(5), 2007, fit springs to a finite element's stiffness instead).
    Isotropy, C44 = (C11 - C12) / 2, needs k1 = k2 + 8/3 k3, and mu = 2/5 E fixes
    k2 + 4/3 k3 = 2/5 E h.  Splitting that equally between face and body diagonals:

        k1 = 3/5 E h,    k2 = 1/5 E h,    k3 = 3/20 E h.

    Every cell gives each of its 12 sides a quarter of k1, each of its 12 face diagonals half
    of k2 and its 4 body diagonals k3 (3/20, 1/10 and 3/20 E h), so a side on a face of the
    cube has half of k1, one on an edge a quarter, and a face diagonal on a face half of k2:
    the cube is then exactly that solid, up to its boundary, under any uniform small strain.
    """
    index = np.indices((n, n, n)).reshape(3, -1).T
    # How many cells meet a node along each axis: 1 on a face of the cube, 2 inside.
    cells = (index > 0).astype(np.int64) + (index < n - 1)
    mass = None if density is None else density * spacing**3 / 8.0 * cells.prod(axis=1)
    stiffness: dict[str, np.ndarray] = {}
    if youngs_modulus is not None:
        # Each cell's share by the number of axes the spring crosses: a side, a face or a body diagonal.
        share = youngs_modulus * spacing * np.array([0.0, 3.0 / 20.0, 1.0 / 10.0, 3.0 / 20.0])
        for family in ("structural", "shear"):
            if family not in pairs:
                continue
            springs = pairs[family]
            crossed = index[springs[:, 0]] != index[springs[:, 1]]
            # The spring lies in every cell its first end meets along the axes it does not cross.
            holders = np.where(crossed, 1, cells[springs[:, 0]]).prod(axis=1)
            stiffness[family] = share[crossed.sum(axis=1)] * holders
    return mass, stiffness


def _lattice_faces(n: int, positions: np.ndarray) -> np.ndarray:
    """Surface triangles of an n^3 lattice (index (a, b, c) -> a n^2 + b n + c), each turned
    so its normal points away from the cube's centre."""
    index = np.arange(n**3).reshape(n, n, n)
    faces = []
    for axis in range(3):
        for side in (0, n - 1):
            sheet = np.take(index, side, axis=axis)
            a, b = sheet[:-1, :-1].ravel(), sheet[:-1, 1:].ravel()
            c, d = sheet[1:, :-1].ravel(), sheet[1:, 1:].ravel()
            faces.append(np.column_stack([a, b, c]))
            faces.append(np.column_stack([b, d, c]))
    triangles = np.concatenate(faces)
    corners = positions[triangles]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    outward = np.einsum("ij,ij->i", normals, corners.mean(axis=1) - positions.mean(axis=0)) > 0
    triangles[~outward] = triangles[~outward][:, ::-1]
    return triangles


@_checks_keywords()
def pyramid(size: float = 1.0, *, height: float | None = None, mass: float = 1.0, k: float = 150.0,
            c: float | None = None, elevation: float = 0.5, ground: bool = True, **options: Any) -> System:
    """A square pyramid of springs: four base corners and an apex, every edge a spring plus
    both base diagonals (which keep the base from shearing), ``elevation`` m above a ground
    plane.  Defaults: side 1 m, height = side, 1 kg nodes, k = 150 N/m, 90 % critical damping.

    Parameters
    ----------
    size : float, default 1.0
        Side of the square base (m), > 0.
    height : float, optional
        Height of the apex above the base (m), > 0; default ``size``.
    mass : float, default 1.0
        Mass of each node (kg).
    k : float, default 150.0
        Stiffness (N/m).
    c : float, optional
        Damping (N s/m); default ``0.9 * 2 sqrt(mass k)``.
    elevation : float, default 0.5
        Height of the base above the ground (m).
    ground : bool, default True
        Whether to add the ground plane (friction 0.5).
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite, or
        ``elevation`` is not finite.
    """
    size = _positive(size, "size")
    height = size if height is None else _positive(height, "height")
    half = size / 2.0
    base = _finite(elevation, "elevation")
    positions = np.array([
        [-half, base, -half], [half, base, -half], [half, base, half], [-half, base, half],
        [0.0, base + height, 0.0],
    ])
    pairs = {
        "structural": np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 4], [1, 4], [2, 4], [3, 4]]),
        "shear": np.array([[0, 2], [1, 3]]),
    }
    damping = _critical_damping(mass, k) if c is None else c
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 4, 1], [1, 4, 2], [2, 4, 3], [3, 4, 0]])
    system = _assemble(positions, pairs, k, damping, mass=mass, faces=faces, **options)
    if ground:
        system.add_plane(friction=0.5)
    return system


@_checks_keywords("from_mesh")
def spring_sphere(subdivisions: int = 2, *, radius: float = 0.5, center: ArrayLike = (0.0, 1.0, 0.0),
                  mass: float | None = None, k: float | None = None, c: float | None = None,
                  bend_k: float | None = None, stabilise: str | None = "center", **options: Any) -> System:
    """A closed sphere of springs that keeps its shape: an icosphere (``subdivisions`` times
    refined, 12, 42, 162, 642 ... vertices) converted to springs along its edges, with
    stabilising springs (``"center"``: every vertex tied to an extra centre node;
    ``"opposite"``: to its antipode; None: none, and it collapses) and optional bending
    springs.  Defaults: 0.05 kg per node, k = 500 N/m and 90 % of critical damping for one
    node on one spring (with material values: ``damping_ratio=0.9`` on every spring).

    Material values replace them: ``density`` (kg/m^3) or ``total_mass`` (kg),
    ``youngs_modulus`` (Pa), ``damping_ratio`` and, for a hollow shell (``stabilise`` not
    ``"center"``), ``thickness`` (m), as in :func:`msprings.mesh.from_mesh`; with a density (or
    total mass) and a Young's modulus the ball weighs and squashes the same at every
    ``subdivisions``.

    Parameters
    ----------
    subdivisions : int, default 2
        Icosphere refinements (0 to 13).
    radius : float, default 0.5
        Radius (m), > 0.
    center : array_like, shape (3,), default (0, 1, 0)
        Centre (m).
    mass : float, optional
        Mass of each node (kg); default 0.05 unless a density or total mass is given.
    k : float, optional
        Stiffness (N/m); default 500.0 unless a Young's modulus is given.
    c : float, optional
        Damping (N s/m); default 90 % of critical for one node on one spring.
    bend_k : float, optional
        Stiffness of the bending springs (N/m); none if None.
    stabilise : {"center", "opposite", None}, default "center"
        How the sphere keeps its volume.
    **options
        Further keywords for :func:`msprings.mesh.from_mesh` (``density``, ``total_mass``,
        ``youngs_modulus``, ``damping_ratio``, ``thickness``) and :class:`~msprings.System`.

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite,
        ``stabilise`` is not one of its choices, or material values conflict.
    """
    from . import mesh

    sphere = mesh.icosphere(subdivisions, radius=_positive(radius, "radius"), center=center)
    if "density" not in options and "total_mass" not in options and mass is None:
        mass = 0.05
    if "youngs_modulus" not in options and k is None:
        k = 500.0
    if "damping_ratio" not in options and c is None:
        if mass is not None and k is not None:
            c = _critical_damping(mass, k)
        else:
            options["damping_ratio"] = 0.9
    system, counts = mesh.from_mesh(sphere.vertices, sphere.faces, mass=mass, k=k, c=c, bend_k=bend_k,
                                    stabilise=stabilise, uv=sphere.uv, return_counts=True, **options)
    start = 0
    for name in ("structural", "bend", "stabilise"):
        if counts.get(name, 0):
            system.families[name] = np.arange(start, start + counts[name])
            start += counts[name]
    return system


@_checks_keywords()
def balloon(subdivisions: int = 2, *, radius: float = 0.3, string_length: float = 1.5, string_nodes: int = 10,
            lift: float = 1.0, mass: float = 0.002, k: float = 200.0, string_k: float = 200.0,
            string_c: float = 0.05, **options: Any) -> System:
    """A balloon on a string: a spring sphere (see :func:`spring_sphere`) whose lowest vertex
    is tied to a string of ``string_nodes`` nodes hanging ``string_length`` m below it, its
    end pinned at the origin.  Every sphere node feels an upward external force so the
    sphere has a net buoyant ``lift`` (N) beyond its weight: the balloon floats and pulls
    the string taut.

    Parameters
    ----------
    subdivisions : int, default 2
        Icosphere refinements of the sphere (0 to 13).
    radius : float, default 0.3
        Radius of the sphere (m), > 0.
    string_length : float, default 1.5
        Length of the string (m), > 0.
    string_nodes : int, default 10
        Nodes on the string (>= 2).
    lift : float, default 1.0
        Net upward force on the sphere beyond its weight (N).
    mass : float, default 0.002
        Mass of each sphere node (kg).
    k : float, default 200.0
        Stiffness of the sphere's springs (N/m).
    string_k : float, default 200.0
        Stiffness of the string's springs (N/m).
    string_c : float, default 0.05
        Damping of the string's springs (N s/m).
    **options
        Further keywords for :class:`~msprings.System` (``integrator``, ``gravity``,
        ``pinned``, ...).

    Returns
    -------
    System
        The scene, at rest at its initial positions, time 0.

    Raises
    ------
    TypeError
        If a keyword is neither taken by this builder nor handed on (the message suggests
        the closest one), a count is not an integer, or a value has the wrong type.
    ValueError
        If a count is below its minimum or too large for int32 node indices, a length is
        not finite and > 0, a mass, stiffness or damping is negative or not finite.
    """
    from . import mesh

    string_nodes = _positive_int(string_nodes, "string_nodes", 2)
    string_length = _positive(string_length, "string_length")
    radius = _positive(radius, "radius")
    center = np.array([0.0, string_length + radius, 0.0])
    sphere = mesh.icosphere(subdivisions, radius=radius, center=center)
    damping = _critical_damping(mass, k)
    body, counts = mesh.from_mesh(sphere.vertices, sphere.faces, mass=mass, k=k, c=damping,
                                  stabilise="center", uv=sphere.uv, return_counts=True)
    body_positions = body.x.copy()
    body_masses = body.mass.copy()
    bottom = int(np.argmin(sphere.vertices[:, 1]))
    step = string_length / (string_nodes - 1)
    string = np.column_stack([
        np.zeros(string_nodes - 1), np.arange(string_nodes - 1) * step, np.zeros(string_nodes - 1),
    ])
    offset = len(body_positions)
    positions = np.concatenate([body_positions, string])
    string_index = np.arange(offset, offset + string_nodes - 1)
    links = np.column_stack([string_index[:-1], string_index[1:]])
    tie = np.array([[string_index[-1], bottom]])
    springs = np.concatenate([body.springs, links, tie])
    stiffness = np.concatenate([body.k, np.full(len(links) + 1, string_k)])
    dampers = np.concatenate([body.c, np.full(len(links) + 1, string_c)])
    masses = np.concatenate([body_masses, np.full(string_nodes - 1, mass)])
    options.setdefault("pinned", [int(string_index[0])])
    system = System(positions, springs, mass=masses, k=stiffness, c=dampers, faces=body.faces,
                    uv=np.concatenate([body.uv, np.zeros((string_nodes - 1, 2))]) if body.uv is not None else None,
                    **options)
    sphere_nodes = np.arange(offset)
    weight = float(np.sum(masses[sphere_nodes])) * float(-system.gravity[1])
    system.external[sphere_nodes, 1] = (weight + float(lift)) / len(sphere_nodes)
    structural = counts["structural"]
    system.families = {
        "structural": np.arange(structural),
        "stabilise": np.arange(structural, len(body.springs)),
        "string": np.arange(len(body.springs), len(springs)),
    }
    return system
