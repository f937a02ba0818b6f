"""Recorded runs: :meth:`System.run` steps in C and keeps every ``record_every``-th state."""
from __future__ import annotations

import json
import math
import mmap
import os
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _core
from ._archive import Archive, face_bytes_limit
from ._system import Energy, Ledger, _check_pickle_version

if TYPE_CHECKING:
    import pandas

    from ._system import System

__all__ = ["ENERGY_FIELDS", "LEDGER_FIELDS", "Trajectory", "record"]

#: The columns of :attr:`Trajectory.energy`: the fields of :class:`msprings.Energy` (J).
ENERGY_FIELDS = Energy._fields
#: The columns of :attr:`Trajectory.ledger`: the fields of :class:`msprings.Ledger` (J).
LEDGER_FIELDS = Ledger._fields

FORMAT_NAME = "msprings-trajectory"
FORMAT_VERSION = 1
# The ledger columns of files written before the ledger had numerical: read with it as 0.
_LEDGER_FIELDS_BEFORE = tuple(name for name in LEDGER_FIELDS if name != "numerical")


@dataclass(eq=False, repr=False)
class Trajectory:
    """A recorded run.  Arrays are preallocated and indexed by record ``r``:

    - ``times`` (R,) in s; ``steps`` (R,) step counts;
    - ``positions`` (R, n, 3) in m; ``velocities`` (R, n, 3) in m/s or None;
    - ``energy`` (R, 7): kinetic, spring, gravity, dissipated, work, mechanical, total (J),
      the columns named in :data:`ENERGY_FIELDS`;
    - ``ledger`` (R, 11): dissipated and work by mechanism (J), the columns named in
      :data:`LEDGER_FIELDS` (dampers, drag, contact, energy_loss, numerical; wind, external,
      pins, colliders, constraints, user);
    - every column of both by name, ``trajectory.column("wind")``, and also as an attribute
      (``trajectory.kinetic``, ``trajectory.wind``, ...: views of the columns) -- except the
      ledger's ``colliders``, since ``trajectory.colliders`` describes the colliders;
    - the topology and scene needed to draw it: ``springs``, ``faces``, ``pinned``, ``uv``,
      ``colliders`` (one dict per collider, as at the start) and ``collider_centers``
      (R, C, 3), since colliders may move.

    Trajectories are made by :meth:`msprings.System.run` and :meth:`load`, not by hand.

    Parameters
    ----------
    times : numpy.ndarray, shape (R,)
        Time of each record (s).
    steps : numpy.ndarray of int64, shape (R,)
        Step count of each record (-1 for a record not made).
    positions : numpy.ndarray, shape (R, n, 3)
        Node positions (m).
    velocities : numpy.ndarray, shape (R, n, 3), or None
        Node velocities (m/s), if recorded.
    energy : numpy.ndarray, shape (R, 7)
        Energy columns (J), named in :data:`ENERGY_FIELDS`.
    ledger : numpy.ndarray, shape (R, 11)
        Ledger columns (J), named in :data:`LEDGER_FIELDS`.
    springs : numpy.ndarray of int, shape (m, 2)
        Node index pairs of the springs.
    faces : numpy.ndarray of int, shape (f, 3)
        Node index triples of the faces.
    pinned : numpy.ndarray of bool, shape (n,)
        Which nodes are pinned.
    rest : numpy.ndarray, shape (m,)
        Rest lengths (m).
    uv : numpy.ndarray, shape (n, 2), or None
        Texture coordinates (dimensionless).
    colliders : list of dict, default []
        One description per collider, as :meth:`msprings.Collider.describe` gives it.
    collider_centers : numpy.ndarray, shape (R, C, 3), default empty
        Collider centres at each record (m).
    dt : float, default 0.0
        Time step of the run (s).
    """

    times: np.ndarray
    steps: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    energy: np.ndarray
    ledger: np.ndarray
    springs: np.ndarray
    faces: np.ndarray
    pinned: np.ndarray
    rest: np.ndarray
    uv: np.ndarray | None
    colliders: list[dict[str, Any]] = field(default_factory=list)
    collider_centers: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))
    dt: float = 0.0

    def __len__(self) -> int:
        return len(self.times)

    def __repr__(self) -> str:
        nodes = self.positions.shape[1]
        span = f"t = {self.times[0]:.6g} to {self.times[-1]:.6g} s" if len(self) else "no records"
        return (f"<msprings.Trajectory: {len(self)} records, {span}, {nodes} nodes, {len(self.springs)} springs, "
                f"{len(self.faces)} faces, {len(self.colliders)} colliders>")

    def column(self, name: str) -> np.ndarray:
        """The energy or ledger column ``name``.

        Parameters
        ----------
        name : str
            One of :data:`ENERGY_FIELDS` or :data:`LEDGER_FIELDS`.

        Returns
        -------
        numpy.ndarray, shape (R,)
            The column (J), a view.

        Raises
        ------
        ValueError
            If ``name`` is not a column name.
        """
        if name in ENERGY_FIELDS:
            return self.energy[:, ENERGY_FIELDS.index(name)]
        if name in LEDGER_FIELDS:
            return self.ledger[:, LEDGER_FIELDS.index(name)]
        raise ValueError(f"name must be one of {ENERGY_FIELDS + LEDGER_FIELDS}, not {name!r}")

    def __getattr__(self, name: str) -> np.ndarray:
        if name in ENERGY_FIELDS or name in LEDGER_FIELDS:
            return self.column(name)
        raise AttributeError(name)

    def frame(self, r: int) -> dict[str, Any]:
        """Record ``r`` as a dict that :func:`msprings.plot.draw` takes.

        Parameters
        ----------
        r : int
            Record index (negative counts from the end).

        Returns
        -------
        dict of str to object
            ``positions`` (n, 3) in m (a view), ``time`` in s, ``springs``, ``faces``,
            ``pinned``, ``rest`` (m) and ``colliders`` (descriptions with their centre at
            that record).

        Raises
        ------
        IndexError
            If ``r`` is out of range.
        """
        centers = self.collider_centers[r] if self.collider_centers.size else np.zeros((0, 3))
        colliders = [dict(c, center=tuple(centers[i])) for i, c in enumerate(self.colliders)]
        return {
            "positions": self.positions[r],
            "time": float(self.times[r]),
            "springs": self.springs,
            "faces": self.faces,
            "pinned": self.pinned,
            "rest": self.rest,
            "colliders": colliders,
        }

    def lengths(self, r: int) -> np.ndarray:
        """Spring lengths at record ``r``.

        Parameters
        ----------
        r : int
            Record index (negative counts from the end).

        Returns
        -------
        numpy.ndarray, shape (m,)
            Length of each spring (m).

        Raises
        ------
        IndexError
            If ``r`` is out of range.
        """
        x = self.positions[r]
        return np.linalg.norm(x[self.springs[:, 1]] - x[self.springs[:, 0]], axis=1)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trajectory to a compressed NumPy ``.npz`` archive.

        :meth:`load` reads it back with every array equal; the energy and ledger columns are
        stored with their names.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write (the name is used as given, an existing file is overwritten).

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        OSError
            If ``path`` cannot be written.
        """
        entries: dict[str, Any] = {
            "format": np.array(FORMAT_NAME),
            "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
            "times": self.times, "steps": self.steps, "positions": self.positions,
            "has_velocities": np.array(self.velocities is not None),
            "velocities": np.zeros((0, 0, 3)) if self.velocities is None else self.velocities,
            "energy": self.energy, "energy_fields": np.array(ENERGY_FIELDS),
            "ledger": self.ledger, "ledger_fields": np.array(LEDGER_FIELDS),
            "springs": self.springs, "faces": self.faces, "pinned": self.pinned, "rest": self.rest,
            "has_uv": np.array(self.uv is not None), "uv": np.zeros((0, 2)) if self.uv is None else self.uv,
            "colliders": np.array(json.dumps(self.colliders, default=_json_number)),
            "collider_centers": self.collider_centers, "dt": np.array(self.dt, dtype=np.float64),
        }
        target = Path(path)
        with open(target, "wb") as stream:
            np.savez_compressed(stream, **entries)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trajectory:
        """Read a trajectory written by :meth:`save` (or by ``python -m msprings run ... -o
        file.npz``).

        Parameters
        ----------
        path : str or os.PathLike
            The trajectory file (``*.npz``).

        Returns
        -------
        Trajectory
            The trajectory, every array equal to the saved one's.

        Raises
        ------
        OSError
            If ``path`` cannot be opened (FileNotFoundError if it does not exist).
        ValueError
            The file is not an msprings trajectory, is damaged, or its arrays disagree in
            shape (the message names the entry).
        """
        with Archive(path, "msprings trajectory") as archive:
            return _trajectory_from_archive(archive)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling, bit for bit: every field's array and value as it is (with protocol 5 the
        arrays may travel out of band), under the version :data:`PICKLE_VERSION`; a
        differentiable run's tape (its starting system and checkpoints) travels with it, so
        :meth:`backward` works on the unpickled copy too."""
        return _unpickle_trajectory, (type(self), PICKLE_VERSION,
                                      {item.name: getattr(self, item.name) for item in fields(self)},
                                      getattr(self, "_tape", None))

    def to_dataframe(self) -> pandas.DataFrame:
        """The records as a :class:`pandas.DataFrame`.

        Returns
        -------
        pandas.DataFrame
            One row per record with ``time`` (s), ``steps`` and every energy and ledger
            column (J).

        Raises
        ------
        ImportError
            If pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("Trajectory.to_dataframe needs pandas: pip install pandas") from error
        columns: dict[str, np.ndarray] = {"time": self.times, "steps": self.steps}
        columns.update({name: self.energy[:, i] for i, name in enumerate(ENERGY_FIELDS)})
        columns.update({name: self.ledger[:, i] for i, name in enumerate(LEDGER_FIELDS)})
        return pd.DataFrame(columns)


def _json_number(value: Any) -> Any:
    """NumPy scalars and arrays in collider descriptions, for json.dumps."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store {type(value).__name__} in a trajectory file")


# The longest text of a trajectory's str entries other than colliders (bytes of data), and
# how much of the colliders' JSON description each collider may take.
_TEXT_BYTES_LIMIT = 4 * 256
_COLLIDER_JSON_BYTES = 4 * 4096
_COLLIDER_KINDS = ("plane", "sphere", "box", "cylinder")


def _trajectory_from_archive(archive: Archive) -> Trajectory:
    name = archive.name
    if "format" not in archive or str(archive.read("format", "U", (), _TEXT_BYTES_LIMIT)) != FORMAT_NAME:
        raise ValueError(f"{name} is not an msprings trajectory (no format entry {FORMAT_NAME!r})")
    version = int(archive.read("format_version", "iu", ()))
    if version != FORMAT_VERSION:
        raise ValueError(f"{name} is an msprings trajectory of format version {version}; this msprings "
                         f"reads version {FORMAT_VERSION}")
    # Every entry's header is checked against the others before any entry's data is read, so
    # that a member claiming a size the rest of the file does not agree with costs nothing.
    records = archive.agree("records", dict.fromkeys(("times", "steps", "positions", "energy", "ledger",
                                                      "collider_centers"), 0))
    nodes = archive.agree("nodes", {"positions": 1, "pinned": 0})
    springs = archive.agree("springs", dict.fromkeys(("springs", "rest"), 0))
    colliders = archive.agree("colliders", {"collider_centers": 1})
    ledger_fields = archive.read("ledger_fields", "U", (None,), _TEXT_BYTES_LIMIT * len(LEDGER_FIELDS))
    if tuple(ledger_fields.tolist()) not in (LEDGER_FIELDS, _LEDGER_FIELDS_BEFORE):
        raise archive.damaged("ledger_fields", f"its ledger columns {ledger_fields.tolist()} are not the ones this "
                                               "msprings uses")
    with_velocities = bool(archive.read("has_velocities", "b", ()))
    with_uv = bool(archive.read("has_uv", "b", ()))
    layout: dict[str, tuple[str, tuple[int | None, ...]]] = {
        "times": ("f", (records,)), "steps": ("iu", (records,)), "positions": ("f", (records, nodes, 3)),
        "energy": ("f", (records, len(ENERGY_FIELDS))), "energy_fields": ("U", (len(ENERGY_FIELDS),)),
        "ledger": ("f", (records, len(ledger_fields))),
        "springs": ("iu", (springs, 2)), "faces": ("iu", (None, 3)), "pinned": ("b", (nodes,)),
        "rest": ("f", (springs,)), "collider_centers": ("f", (records, None, 3)), "colliders": ("U", ()),
        "dt": ("f", ()),
        "velocities": ("f", (records, nodes, 3) if with_velocities else (None, None, 3)),
        "uv": ("f", (nodes, 2) if with_uv else (None, 2)),
    }
    limits = {"energy_fields": _TEXT_BYTES_LIMIT * len(ENERGY_FIELDS),
              "colliders": _COLLIDER_JSON_BYTES * (1 + colliders),
              "faces": face_bytes_limit(nodes, archive.header("faces").dtype.itemsize)}
    for key, (kinds, shape) in layout.items():
        archive.check(key, kinds, shape, limits.get(key))

    # a run that failed leaves records it did not make: step count -1 and NaN (System.run)
    steps = archive.read("steps", *layout["steps"])
    if steps.size and steps.min() < -1:
        raise archive.damaged("steps", f"it holds the step count {steps.min()}, below -1 (a record not made)")
    made = steps >= 0
    per_record = {"times", "positions", "velocities", "energy", "ledger", "collider_centers"}

    def get(key: str) -> np.ndarray:
        value = archive.read(key, *layout[key])
        checked = value[made] if key in per_record and value.shape[:1] == made.shape else value
        if value.dtype.kind == "f" and not np.all(np.isfinite(checked)):
            raise archive.damaged(key, "it holds NaN or infinity" + (" in a record made" if key in per_record else ""))
        return value

    if tuple(get("energy_fields").tolist()) != ENERGY_FIELDS:
        raise archive.damaged("energy_fields", "its energy columns are not the ones this msprings uses")
    times, positions = get("times"), get("positions")
    energy, ledger = get("energy"), get("ledger")
    if tuple(ledger_fields.tolist()) == _LEDGER_FIELDS_BEFORE:
        # written before the ledger had numerical, which nothing booked then
        ledger = np.insert(ledger, LEDGER_FIELDS.index("numerical"), 0.0, axis=1)
    spring_pairs, faces, pinned, rest = get("springs"), get("faces"), get("pinned"), get("rest")
    velocities = get("velocities") if with_velocities else None
    uv = get("uv") if with_uv else None
    centers = get("collider_centers")
    descriptions = _collider_descriptions(archive, str(get("colliders")))
    if len(descriptions) != colliders and (descriptions or centers.size):
        raise archive.damaged("colliders", f"it describes {len(descriptions)} colliders but collider_centers has "
                                           f"shape {centers.shape}, for {colliders}")
    for key, indices in (("springs", spring_pairs), ("faces", faces)):
        if indices.size and (indices.min() < 0 or indices.max() >= nodes):
            raise ValueError(f"{archive.name} is a damaged msprings trajectory: {key} refer to nodes outside "
                             f"0..{nodes - 1}")
    return Trajectory(times, steps.astype(np.int64), positions, velocities, energy, ledger,
                      spring_pairs.astype(np.int32), faces.astype(np.int32), pinned, rest, uv, descriptions, centers,
                      float(get("dt")))


#: The version of the data that a pickled :class:`Trajectory` carries; unpickling refuses any other.
PICKLE_VERSION = 1


def _unpickle_trajectory(cls: Any, version: Any, values: Any, tape: Any = None) -> Trajectory:
    """Rebuilds a Trajectory pickled by :meth:`Trajectory.__reduce__`, checking what it is
    given as :meth:`Trajectory.load` checks a file.

    Raises
    ------
    ValueError
        The data is damaged (missing or unknown fields, wrong dtypes or shapes, NaN or
        infinity in a record made, indices outside the nodes), or its version is not
        :data:`PICKLE_VERSION`.
    """
    what = "cannot unpickle an msprings.Trajectory"
    _check_pickle_version(what, version, PICKLE_VERSION)
    if not (isinstance(cls, type) and issubclass(cls, Trajectory)):
        raise ValueError(f"{what}: {cls!r} is not a Trajectory class")
    names = [item.name for item in fields(cls)]  # a subclass's fields too
    if not isinstance(values, dict) or set(values) != set(names):
        raise ValueError(f"{what}: the data is damaged (it must hold exactly the fields {', '.join(names)})")

    def damaged(key: str, why: str) -> ValueError:
        return ValueError(f"{what}: the data is damaged: {key} {why}")

    def array(key: str, kinds: str, shape: tuple[int | None, ...]) -> np.ndarray:
        value = values[key]
        if not isinstance(value, np.ndarray) or value.dtype.kind not in kinds or value.ndim != len(shape) or any(
                size is not None and size != actual for size, actual in zip(shape, value.shape)):
            wanted = tuple("any" if size is None else size for size in shape)
            raise damaged(key, f"is not an array of kind {kinds!r} and shape {wanted}")
        return value

    times = array("times", "f", (None,))
    records = len(times)
    steps = array("steps", "i", (records,))
    positions = array("positions", "f", (records, None, 3))
    nodes = positions.shape[1]
    velocities = None if values["velocities"] is None else array("velocities", "f", (records, nodes, 3))
    energy = array("energy", "f", (records, len(ENERGY_FIELDS)))
    ledger = array("ledger", "f", (records, len(LEDGER_FIELDS)))
    springs = array("springs", "iu", (None, 2))
    faces = array("faces", "iu", (None, 3))
    array("pinned", "b", (nodes,))  # checked: the trajectory keeps it as given
    rest = array("rest", "f", (len(springs),))
    uv = None if values["uv"] is None else array("uv", "f", (nodes, 2))
    colliders = values["colliders"]
    centers = array("collider_centers", "f", (None, None, 3))
    if not isinstance(colliders, list) or not all(isinstance(c, dict) for c in colliders):
        raise damaged("colliders", "is not a list of descriptions (dicts)")
    # empty centers stand for "no colliders" or "no records": with both, frame(r) reads them
    if (centers.size or (records and colliders)) and centers.shape[:2] != (records, len(colliders)):
        raise damaged("collider_centers", f"has shape {centers.shape}, not ({records}, {len(colliders)}, 3)")
    dt = values["dt"]
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt):
        raise damaged("dt", "is not a finite number of seconds")
    # a run that failed leaves records it did not make: step count -1 and NaN (System.run)
    if steps.size and steps.min() < -1:
        raise damaged("steps", f"holds the step count {steps.min()}, below -1 (a record not made)")
    made = steps >= 0
    for key, value in (("times", times), ("positions", positions), ("velocities", velocities),
                       ("energy", energy), ("ledger", ledger), ("collider_centers", centers)):
        if value is not None and value.size and not np.isfinite(value[made]).all():
            raise damaged(key, "holds NaN or infinity in a record made")
    for key, value in (("rest", rest), ("uv", uv)):
        if value is not None and not np.isfinite(value).all():
            raise damaged(key, "holds NaN or infinity")
    for key, indices in (("springs", springs), ("faces", faces)):
        if indices.size and (indices.min() < 0 or indices.max() >= nodes):
            raise damaged(key, f"refer to nodes outside 0..{nodes - 1}")
    if tape is not None:
        from ._gradient import Tape
        from ._system import System

        def integer(value: Any) -> bool:
            return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

        every, run_steps = getattr(tape, "every", None), getattr(tape, "steps", None)
        if not (isinstance(tape, Tape) and isinstance(getattr(tape, "start", None), System)
                and tape.start.n_nodes == nodes and integer(every) and integer(run_steps)
                and 1 <= every <= run_steps and run_steps == steps[-1] - steps[0]
                and isinstance(getattr(tape, "checkpoints", None), np.ndarray)
                and tape.checkpoints.dtype == np.float64
                and tape.checkpoints.shape == (run_steps // every + (run_steps % every != 0) + 1, 2, nodes, 3)
                and isinstance(getattr(tape, "record_steps", None), np.ndarray)
                and tape.record_steps.dtype == np.int64 and tape.record_steps.shape == (records,)
                and np.array_equal(tape.record_steps, steps - steps[0])):
            raise damaged("tape", "is not a differentiable run's tape for these records")
    trajectory = cls.__new__(cls)
    for name in names:
        object.__setattr__(trajectory, name, values[name])
    object.__setattr__(trajectory, "_tape", tape)
    return trajectory


def _refuse_constant(constant: str) -> float:
    raise ValueError(f"it holds {constant}, which is not a finite number")


def _collider_descriptions(archive: Archive, text: str) -> list[dict[str, Any]]:
    """The colliders entry's JSON text as the descriptions :meth:`Collider.describe` gives
    (tuples for vectors); a ValueError naming the entry if it is not one."""
    try:
        described = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise archive.damaged("colliders", "its JSON is nested too deeply") from None
    except ValueError as error:  # json.JSONDecodeError too
        raise archive.damaged("colliders", f"not a JSON description ({error})") from None
    if not isinstance(described, list) or not all(isinstance(c, dict) for c in described):
        raise archive.damaged("colliders", "it is not a list of descriptions")

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    for index, description in enumerate(described):
        if description.get("kind") not in _COLLIDER_KINDS:
            raise archive.damaged("colliders", f"collider {index} has no kind of {_COLLIDER_KINDS}")
        center = description.get("center")
        if not (isinstance(center, list) and len(center) == 3 and all(map(number, center))):
            raise archive.damaged("colliders", f"collider {index} has no center of three finite numbers")
        for key, value in description.items():
            if key != "kind" and not (number(value) or isinstance(value, list) and all(map(number, value))):
                raise archive.damaged("colliders", f"collider {index}'s {key} is not a finite number or a list "
                                                   "of finite numbers")
    # JSON keeps the descriptions' tuples as lists: give them back as they were recorded
    return [{key: tuple(value) if isinstance(value, list) else value for key, value in c.items()}
            for c in described]


def _collider_dicts(system: System) -> list[dict[str, Any]]:
    return [collider.describe() for collider in system.colliders]


class _Progress:
    """A one-line progress bar on stderr (terminal or Jupyter) of ``total`` things counted in
    ``unit`` (steps, members), updated at most 10 times a second."""

    def __init__(self, total: int, unit: str = "steps") -> None:
        self.total = total
        self.unit = unit
        self.last = 0.0
        self.start = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last < 0.1 and done < self.total:
            return
        self.last = now
        width = 30
        filled = int(width * done / self.total)
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} {self.unit}, "
                         f"{rate:,.{1 if rate < 100 else 0}f} {self.unit}/s")
        if done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


#: Arrays of at least this many bytes are mapped in whole before a recording fills them.
_MAP_AT_ONCE = 1 << 22


def _states_array(shape: tuple[int, int, int]) -> np.ndarray:
    """An uninitialised float64 array for recorded positions or velocities.

    A recording writes every page of it, and on Linux (where the system supports it) all its
    pages are mapped in by one request (MAP_POPULATE) instead of one page fault each as the
    records first touch them: on a virtual machine the faults can cost more than copying the
    records.  Elsewhere, or for small arrays, a plain :func:`numpy.empty`.
    """
    size = 8 * shape[0] * shape[1] * shape[2]
    populate = getattr(mmap, "MAP_POPULATE", None)
    if populate is None or size < _MAP_AT_ONCE:
        return np.empty(shape)
    try:
        memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    except (OSError, ValueError, OverflowError):
        return np.empty(shape)
    return np.frombuffer(memory, dtype=np.float64).reshape(shape)


def _why_not(array: Any, shape: tuple[int, ...], dtype: type) -> str | None:
    """Why the array cannot take records of this shape and dtype, or None if it can."""
    if not isinstance(array, np.ndarray):
        return f"is {type(array).__name__}, not an array"
    if array.shape != shape:
        return f"has shape {array.shape}, not {shape}"
    if array.dtype != dtype:  # byte-swapped dtypes too (">f8" is not float64 here)
        return f"has dtype {array.dtype}, not {np.dtype(dtype)}"
    if not array.flags.c_contiguous:
        return "is not C-contiguous"
    if not array.flags.aligned:
        return f"is not aligned (its data starts at an address that is not a multiple of {array.dtype.alignment})"
    if not array.flags.writeable:
        return "is read-only"
    return None


def _reused(array: Any, shape: tuple[int, ...], dtype: type) -> np.ndarray | None:
    """The array, if it can take records of this shape and dtype."""
    return array if _why_not(array, shape, dtype) is None else None


def _records_into(out: Any, count: int, n: int, velocities: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The positions and velocities arrays of ``out`` that a run of ``count`` records of ``n``
    nodes writes into, after checking them; TypeError or ValueError naming ``out`` otherwise."""
    if not isinstance(out, Trajectory):
        raise TypeError(f"out must be a Trajectory (from an earlier run), not {type(out).__name__}")
    shape = (count, n, 3)
    why = _why_not(out.positions, shape, np.float64)
    if why is not None:
        raise ValueError(f"out must hold {count} records of {n} nodes, the records of this run: its positions {why}")
    if not velocities:
        return out.positions, None
    if out.velocities is None:
        raise ValueError("out has no velocities to record into: velocities=True needs a trajectory recorded "
                         "with velocities=True")
    why = _why_not(out.velocities, shape, np.float64)
    if why is not None:
        raise ValueError(f"out's velocities {why}")
    return out.positions, out.velocities


def _refuse_shared(system: System, arrays: list[np.ndarray | None]) -> None:
    """ValueError if two of the arrays a run writes share memory, or one shares the system's state."""
    written = [array for array in arrays if array is not None]
    for i, array in enumerate(written):
        if system._shares_state(array):
            raise ValueError("out's arrays must not share memory with the system's state")
        if any(np.may_share_memory(array, other) for other in written[:i]):
            raise ValueError("out's arrays must not share memory with one another")


def _unmade(trajectory: Trajectory, made: int) -> None:
    """Marks the records from ``made`` on as not made: NaN (and step count -1), and the energy
    sums of those made."""
    for array in (trajectory.times, trajectory.positions, trajectory.velocities, trajectory.energy, trajectory.ledger,
                  trajectory.collider_centers):
        if array is not None:
            array[made:] = np.nan
    trajectory.steps[made:] = -1
    _energy_sums(trajectory.energy, trajectory.ledger)


def record(system: System, dt: float, steps: int, record_every: int = 1, velocities: bool = False,
           progress: bool | None = None, out: Trajectory | None = None, differentiable: bool = False,
           checkpoint_every: int | None = None) -> Trajectory:
    """Step ``system`` and record it: the function behind :meth:`msprings.System.run`.

    See :meth:`msprings.System.run` for what a run records and how ``out`` and
    ``differentiable`` work.

    Parameters
    ----------
    system : System
        The system to step (it is advanced by the run).
    dt : float
        Time step (s), finite and > 0.
    steps : int
        Number of steps (>= 1).
    record_every : int, default 1
        Steps between records (>= 1).
    velocities : bool, default False
        Whether to record velocities too.
    progress : bool, optional
        Whether to show a progress bar on stderr; default only for long runs in a terminal
        or Jupyter.
    out : Trajectory, optional
        An earlier run's trajectory to record into.
    differentiable : bool, default False
        Whether to keep what :meth:`Trajectory.backward` and :meth:`Trajectory.tangent` need.
    checkpoint_every : int, optional
        Steps between kept states of a differentiable run (a multiple of
        ``record_every``); default about ``sqrt(steps)``.

    Returns
    -------
    Trajectory
        The ``1 + ceil(steps / record_every)`` records (``out`` if given).

    Raises
    ------
    TypeError
        If ``steps`` or ``record_every`` is not an integer, ``dt`` is a bool,
        ``differentiable`` is not a bool, ``checkpoint_every`` is not an integer, or ``out``
        is not a Trajectory.
    ValueError
        If ``steps`` or ``record_every`` is < 1, ``dt`` is not finite and > 0, ``out`` does
        not fit the run or shares memory, ``checkpoint_every`` is given without
        ``differentiable=True`` or is bad, or the system has no gradient and
        ``differentiable=True``.
    MemoryError
        If the records do not fit in memory.
    DivergenceError
        If the motion blows up (the system is then as before the run).
    KeyboardInterrupt
        On Ctrl-C (the system is then as before the run).
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"steps must be an integer, not {type(steps).__name__}")
    if isinstance(record_every, bool) or not isinstance(record_every, (int, np.integer)):
        raise TypeError(f"record_every must be an integer, not {type(record_every).__name__}")
    if steps < 1:
        raise ValueError(f"steps = {steps} must be >= 1")
    if record_every < 1:
        raise ValueError(f"record_every = {record_every} must be >= 1")
    if steps > np.iinfo(np.int64).max:
        raise ValueError("steps is out of range: at most 2**63 - 1")
    if isinstance(dt, bool):
        raise TypeError("dt must be a number of seconds, not bool")
    system._check_dt(dt)
    count = 1 + (steps + record_every - 1) // record_every
    n = system.n_nodes
    colliders = system.colliders
    if out is not None:
        positions, speeds = _records_into(out, count, n, velocities)

    def column(name: str, shape: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
        """out's array of that name if it can take the records, else a new one."""
        kept = None if out is None else _reused(getattr(out, name), shape, dtype)
        return np.empty(shape, dtype=dtype) if kept is None else kept

    try:
        times = column("times", (count,))
        step_counts = column("steps", (count,), np.int64)
        if out is None:
            positions = _states_array((count, n, 3))
            speeds = _states_array((count, n, 3)) if velocities else None
        energy = column("energy", (count, len(ENERGY_FIELDS)))
        ledger = column("ledger", (count, len(LEDGER_FIELDS)))
        centers = np.empty((count, len(colliders), 3))
    except (ValueError, MemoryError):  # NumPy refuses sizes beyond its index range with ValueError
        raise MemoryError(f"{count} records of {n} nodes do not fit in memory: record fewer (a larger "
                          "record_every)") from None
    if out is not None:  # out's arrays the run writes into, before anything is written
        _refuse_shared(system, [positions, speeds, times, step_counts, energy, ledger])
    tape = _gradient_tape(system, dt, steps, record_every, differentiable, checkpoint_every)

    last = count - 1

    def keep(r: int) -> bool:
        """Records the state but, unless it is the last record or the caller changed the energy
        since the last step (pending for the ledger's user part), its mechanical energy: the
        next step call keeps that as it starts.  Returns True if it is left to that call."""
        times[r] = system.t
        step_counts[r] = system.steps
        system._record_state(positions[r], None if speeds is None else speeds[r])
        for c, collider in enumerate(colliders):
            centers[r, c] = system._get_collider(collider.id)[1]
        if r == last or (system.steps > 0 and not math.isnan(system._watched_energy())):
            energy[r], ledger[r] = system._energy_and_ledger()
            return False
        ledger[r] = system._ledger(False)
        return True

    show = progress if progress is not None else (_interactive() and steps * (n + system.n_springs) > 5e8)
    bar = _Progress(steps) if show else None
    trajectory = Trajectory(times, step_counts, positions, speeds, energy, ledger, system.springs.copy(), system.faces.copy(),
                            system.pinned.copy(), system.rest.copy(),
                            None if system.uv is None else system.uv.copy(), _collider_dicts(system), centers,
                            float(dt))
    if out is not None:  # the run's arrays and description in the trajectory handed in
        for name in (item.name for item in fields(Trajectory)):
            setattr(out, name, getattr(trajectory, name))
        trajectory = out
    trajectory._tape = None  # until the run completes: a failed run leaves out with no gradient
    left = keep(0)
    if tape is not None:
        tape.keep(system)
    done = 0
    made = 1  # records made
    system._keep_start_energy(True)
    system._continue_calls(True)  # the run's step calls are one call: all or nothing
    try:
        for r in range(1, count):
            chunk = min(record_every, steps - done)
            system._leave_forces(r < last)  # f is read after the run, and only then
            system.step(dt, chunk)
            if left:
                energy[r - 1, :3] = system._start_energy()
            done += chunk
            left = keep(r)
            if tape is not None:
                tape.keep(system)
            made = r + 1
            if bar is not None:
                bar.update(done)
    except BaseException as error:
        if out is not None:  # the caller keeps out: the records not made say so
            if left:  # the last record's energy was to come from the call that raised
                # a step call that diverged kept it as it started (from that record)
                start = system._start_energy() if isinstance(error, _core.DivergenceError) else None
                if start is not None:
                    energy[made - 1, :3] = start
                elif system.steps == step_counts[made - 1]:
                    energy[made - 1, :3] = system._energy_and_ledger()[0][:3]
                else:
                    energy[made - 1, :3] = np.nan
            _unmade(trajectory, made)
        system._roll_back()  # the system as the run found it (a divergence did so already)
        if isinstance(error, _core.DivergenceError):
            system._explain_divergence(error, float(dt), system.integrator, "run")
        raise
    finally:
        system._continue_calls(False)
        system._keep_start_energy(False)
        system._leave_forces(False)
    _energy_sums(energy, ledger)
    trajectory._tape = tape
    return trajectory


def _energy_sums(energy: np.ndarray, ledger: np.ndarray) -> None:
    """Fills the energy columns dissipated, work, mechanical and total from kinetic, spring,
    gravity and the ledger, summed as :meth:`System.energy` sums them (the same bits)."""
    columns = {name: energy[:, i] for i, name in enumerate(ENERGY_FIELDS)}
    parts = {name: ledger[:, i] for i, name in enumerate(LEDGER_FIELDS)}
    dissipated = parts["dampers"] + parts["drag"] + parts["contact"] + parts["energy_loss"] + parts["numerical"]
    work = parts["wind"] + parts["external"] + parts["pins"] + parts["colliders"] + parts["constraints"] + parts["user"]
    mechanical = columns["kinetic"] + columns["spring"] + columns["gravity"]
    columns["dissipated"][:] = dissipated
    columns["work"][:] = work
    columns["mechanical"][:] = mechanical
    columns["total"][:] = mechanical + dissipated - work


# ---- gradients through a differentiable run (msprings/_gradient.py) -------------------------
# Trajectory.backward and Trajectory.tangent, kept apart from the class body above; a
# differentiable run leaves its Tape in the trajectory's _tape (None otherwise).


def _gradient_tape(system: System, dt: float, steps: int, record_every: int, differentiable: bool,
                   checkpoint_every: int | None) -> Any:
    """The Tape a differentiable run keeps, or None; ValueError if the system has no gradient."""
    if not isinstance(differentiable, (bool, np.bool_)):
        raise TypeError(f"differentiable must be True or False, not {type(differentiable).__name__}")
    if not differentiable:
        if checkpoint_every is not None:
            raise ValueError("checkpoint_every needs differentiable=True")
        return None
    from ._gradient import Tape

    return Tape(system, dt, steps, record_every, checkpoint_every)


def _backward(self: Trajectory, positions: Any = None, velocities: Any = None) -> Any:
    """The gradient of a loss L through this differentiable run (the exact adjoint of its steps).

    Parameters
    ----------
    positions : array_like, shape (records, n, 3), optional
        dL/d(recorded positions), shaped like :attr:`positions` (L per m).
    velocities : array_like, shape (records, n, 3), optional
        dL/d(recorded velocities) (L per m/s); the velocities need not have been recorded.

    Returns
    -------
    msprings.Gradient
        dL/dk, dL/dc, dL/drest (per spring), dL/dmass (per node), dL/dx and dL/dv of the
        initial state (zero rows for pinned nodes) and dL/dexternal (per node), for the
        system as the run started.

    Raises
    ------
    ValueError
        The trajectory was not recorded with ``differentiable=True``; an argument has the wrong
        shape or holds NaN or infinity.
    TypeError
        Neither argument given, or one is not an array of numbers.
    KeyboardInterrupt
        Ctrl-C during the pass (checked about every 25 ms).
    """
    from ._gradient import backward

    return backward(self, positions, velocities)


def _tangent(self: Trajectory, velocities: bool = False, **direction: Any) -> Any:
    """The derivative of the records along one direction of the parameters (forward mode).

    ``direction`` moves any of ``k``, ``c``, ``rest`` (m,), ``mass`` (n,), ``x``, ``v``,
    ``external`` (n, 3) (arrays that broadcast to those shapes; the pinned nodes' rows of x and
    v are ignored).

    Parameters
    ----------
    velocities : bool, default False
        Whether to compute the velocities' derivatives too.
    **direction
        The direction: ``k``, ``c``, ``rest`` (m,), ``mass`` (n,), ``x``, ``v``,
        ``external`` (n, 3), each array_like in the unit of its parameter.

    Returns
    -------
    msprings.Tangent
        ``positions`` (records, n, 3), the derivative of the recorded positions (m per unit
        of the direction), and ``velocities`` (records, n, 3) if ``velocities``, else None.

    Raises
    ------
    ValueError
        The trajectory was not recorded with ``differentiable=True``; a direction array
        does not broadcast to its parameter's shape or holds NaN or infinity.
    TypeError
        A keyword is not one of the parameters.
    KeyboardInterrupt
        Ctrl-C during the pass.
    """
    from ._gradient import tangent

    return tangent(self, velocities, **direction)


for _method, _name in ((_backward, "backward"), (_tangent, "tangent")):
    _method.__name__, _method.__qualname__ = _name, f"Trajectory.{_name}"  # as help() and errors name them
Trajectory.backward = _backward  # type: ignore[attr-defined]
Trajectory.tangent = _tangent  # type: ignore[attr-defined]
