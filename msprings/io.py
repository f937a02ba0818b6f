"""Saving and loading a whole :class:`msprings.System` as one versioned ``.npz`` file.

A model file holds everything needed to carry on a simulation bit for bit: the topology
(springs, faces), the parameters (masses, pins, rest lengths, stiffness, damping), every
option (each of ``msprings._core.OPTIONS``, as ``option_<name>``: integrator, gravity, drag,
air, solver settings, ...), the colliders, texture coordinates, the initial state that
:meth:`~msprings.System.reset` returns to, and the current state (positions, velocities,
forces, external forces, time, step count and the energy ledger,
:meth:`~msprings.System.ledger`).  Not saved: the implicit solver's statistics of the last
step and which warnings have already been issued.

The file is a plain NumPy ``.npz`` archive (no pickled objects) whose ``format`` entry is
:data:`FORMAT_NAME` and ``format_version`` entry is :data:`FORMAT_VERSION`.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import _core
from ._archive import Archive, face_bytes_limit
from ._system import Ledger, System

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load", "save"]

FORMAT_NAME = "msprings.model"
"""The ``format`` entry of every model file."""

FORMAT_VERSION = 3
"""The model file version this module writes; it reads every version up to this one.
Version 3 stores the ledger by mechanism (``ledger``, the eleven parts of
:class:`msprings.Ledger` in its order).  Version 2 stored it without ``numerical``, which
is read as 0 (those versions booked nothing there).  Version 1 stored one ``dissipated``
total, which is read as dissipated by dampers (or, when negative, as work done by the wind,
the one mechanism that made it negative)."""

# How each kind of option (msprings._core.OPTIONS) is stored under "option_<name>": the
# entry's dtype, the dtype kinds and shape a file may hold, and the conversion back to the
# value the attribute takes.  An optional real that is off (None) is stored as NaN.
_OPTION_ENTRIES: dict[str, tuple[type, str, tuple[int, ...], Callable[[np.ndarray], Any]]] = {
    "real": (np.float64, "f", (), float),
    "real_or_none": (np.float64, "f", (), float),
    "optional_real": (np.float64, "f", (), float),
    "integer": (np.int64, "iu", (), int),
    "vector3": (np.float64, "f", (3,), np.asarray),
    "integrator": (np.str_, "U", (), str),
}


def _option_entry(system: System, option: Any) -> np.ndarray:
    """The model file's entry of one option (a record of ``_core.OPTIONS``) of ``system``."""
    dtype, _, shape, _ = _OPTION_ENTRIES[option.kind]
    value = getattr(system, option.name)
    return np.array(np.nan if value is None else value, dtype=dtype).reshape(shape)


def _option_value(archive: Archive, option: Any) -> Any:
    """One option's value, read from its model file entry (dtype and shape checked)."""
    _, kinds, shape, convert = _OPTION_ENTRIES[option.kind]
    value = archive.read(f"option_{option.name}", kinds, shape)
    if option.kind == "optional_real" and np.isnan(value):
        return None
    return convert(value)


_COLLIDER_VECTORS = ("center", "axis", "size", "velocity")
_COLLIDER_SCALARS = ("restitution", "friction", "thickness")


def save(system: System, path: str | os.PathLike[str]) -> Path:
    """Write ``system`` to a model file.  See the module documentation for what is stored.

    Parameters
    ----------
    system : System
        The system to save, in its current state.
    path : str or os.PathLike
        Where to write (conventionally ``*.npz``; the name is used as given, an existing
        file is overwritten).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError
        If ``system`` is not an :class:`msprings.System`.
    OSError
        If ``path`` cannot be written (FileNotFoundError for a missing directory,
        IsADirectoryError, PermissionError, ...).
    """
    if not isinstance(system, System):
        raise TypeError(f"save() needs an msprings.System, got {type(system).__name__}")
    x0, v0 = system._initial_state()
    entries: dict[str, Any] = {
        "format": np.array(FORMAT_NAME),
        "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
        # model
        "springs": np.array(system.springs, dtype=np.int32),
        "faces": np.array(system.faces, dtype=np.int32),
        "mass": np.array(system.mass),
        "pinned": np.array(system.pinned, dtype=bool),
        "rest": np.array(system.rest),
        "k": np.array(system.k),
        "c": np.array(system.c),
        "x_initial": x0,
        "v_initial": v0,
        "has_uv": np.array(system.uv is not None),
        "uv": np.zeros((0, 2)) if system.uv is None else np.array(system.uv, dtype=np.float64),
        # state
        "x": np.array(system.x),
        "v": np.array(system.v),
        "f": np.array(system.f),
        "external": np.array(system.external),
        "t": np.array(system.t, dtype=np.float64),
        "steps": np.array(system.steps, dtype=np.int64),
        "ledger": np.array(system._ledger(False), dtype=np.float64),  # as booked; the change since
        # the energy was recorded (watched_energy) is booked by the loaded system's next step
        "watched_energy": np.array(system._watched_energy(), dtype=np.float64),
    }
    entries.update({f"option_{option.name}": _option_entry(system, option) for option in _core.OPTIONS})
    colliders = [system._get_collider(collider_id) for collider_id in system._collider_ids()]
    entries["collider_kind"] = np.array([values[0] for values in colliders], dtype="<U16").reshape(-1)
    for offset, name in enumerate(_COLLIDER_VECTORS, start=1):
        vectors = [values[offset] for values in colliders]
        entries[f"collider_{name}"] = np.array(vectors, dtype=np.float64).reshape(-1, 3)
    for offset, name in enumerate(_COLLIDER_SCALARS, start=1 + len(_COLLIDER_VECTORS)):
        entries[f"collider_{name}"] = np.array([values[offset] for values in colliders], dtype=np.float64).reshape(-1)
    # where each collider starts (its center after reset); collider_center is where it is now
    entries["collider_start"] = np.array([system._collider_start(collider_id) for collider_id in
                                          system._collider_ids()], dtype=np.float64).reshape(-1, 3)
    target = Path(path)
    with open(target, "wb") as stream:
        np.savez_compressed(stream, **entries)
    return target


def load(path: str | os.PathLike[str]) -> System:
    """Read a model file written by :func:`save`.

    Stepping the loaded system gives bitwise the same results as stepping the saved system,
    and :meth:`~msprings.System.reset` returns to the saved initial state.

    The file is not trusted: every entry's type and shape is checked against the others
    from its header, before its data is read, and nothing is unpickled.

    Parameters
    ----------
    path : str or os.PathLike
        The model file (``*.npz``).

    Returns
    -------
    System
        A new system in the saved state.

    Raises
    ------
    OSError
        If ``path`` cannot be opened: FileNotFoundError for no such file,
        IsADirectoryError, PermissionError, ...
    ValueError
        The file is not an msprings model file, is damaged or inconsistent (the message
        names the entry), or was written by a newer version of msprings (its
        ``format_version`` is above :data:`FORMAT_VERSION`).
    """
    with Archive(path, "msprings model file") as archive:
        return _load_archive(archive)


# The longest text a model file's str entries need (bytes of their data): the format name,
# an integrator's name, a collider's kind.
_TEXT_BYTES_LIMIT = 4 * 256


def _layout(archive: Archive, version: int) -> dict[str, tuple[str, tuple[int | None, ...]]]:
    """Every entry a model file of ``version`` must hold, with its dtype kinds and shape: the
    node, spring and collider counts are the ones their entries' headers agree on."""
    nodes = archive.agree("nodes", dict.fromkeys(("x_initial", "v_initial", "x", "v", "f", "external", "mass",
                                                   "pinned"), 0))
    springs = archive.agree("springs", dict.fromkeys(("springs", "k", "c", "rest"), 0))
    colliders = archive.agree("colliders", dict.fromkeys(("collider_kind", *(f"collider_{key}" for key in (
        *_COLLIDER_VECTORS, *_COLLIDER_SCALARS, "start"))), 0))
    layout: dict[str, tuple[str, tuple[int | None, ...]]] = {
        "format_version": ("iu", ()), "has_uv": ("b", ()),
        "x_initial": ("f", (nodes, 3)), "v_initial": ("f", (nodes, 3)),
        "springs": ("iu", (springs, 2)), "faces": ("iu", (None, 3)),
        "mass": ("f", (nodes,)), "pinned": ("b", (nodes,)),
        "k": ("f", (springs,)), "c": ("f", (springs,)), "rest": ("f", (springs,)),
        "x": ("f", (nodes, 3)), "v": ("f", (nodes, 3)), "f": ("f", (nodes, 3)), "external": ("f", (nodes, 3)),
        "t": ("f", ()), "steps": ("iu", ()), "collider_kind": ("U", (colliders,)),
    }
    for option in _core.OPTIONS:
        _, kinds, shape, _ = _OPTION_ENTRIES[option.kind]
        layout[f"option_{option.name}"] = (kinds, shape)
    layout.update({f"collider_{key}": ("f", (colliders, 3)) for key in _COLLIDER_VECTORS})
    layout.update({f"collider_{key}": ("f", (colliders,)) for key in _COLLIDER_SCALARS})
    if "collider_start" in archive:  # files written before it existed start their colliders where they are
        layout["collider_start"] = ("f", (colliders, 3))
    if version >= 2:
        layout["ledger"] = ("f", (len(Ledger._fields) if version >= 3 else len(Ledger._fields) - 1,))
        layout["watched_energy"] = ("f", ())
    else:
        layout["dissipated"] = ("f", ())
    layout["uv"] = ("f", (nodes, 2) if bool(archive.read("has_uv", "b", ())) else (None, 2))
    return layout


def _load_archive(archive: Archive) -> System:
    name = archive.name
    if "format" not in archive or str(archive.read("format", "U", (), _TEXT_BYTES_LIMIT)) != FORMAT_NAME:
        raise ValueError(f"{name} is not an msprings model file (no format entry {FORMAT_NAME!r})")
    version = int(archive.read("format_version", "iu", ()))
    if version > FORMAT_VERSION:
        raise ValueError(
            f"{name} is an msprings model file of format version {version}, newer than this msprings reads "
            f"(up to {FORMAT_VERSION}): upgrade msprings to load it"
        )
    if version < 1:
        raise ValueError(f"{name} has an invalid format version {version}")

    # Every entry's header is checked against the others before any entry's data is read, so
    # that a member claiming a size the rest of the file does not agree with costs nothing.
    layout = _layout(archive, version)
    limits = {"faces": face_bytes_limit(archive.rows("x_initial"), archive.header("faces").dtype.itemsize)}
    for key, (kinds, shape) in layout.items():
        archive.check(key, kinds, shape, _TEXT_BYTES_LIMIT if kinds == "U" else limits.get(key))

    def read(key: str) -> np.ndarray:
        kinds, shape = layout[key]
        return archive.read(key, kinds, shape)

    def finite(key: str) -> np.ndarray:
        value = read(key)
        if not np.isfinite(value).all():
            raise archive.damaged(key, "it holds NaN or infinity")
        return value

    def checked(key: str, build: Callable[[], Any]) -> Any:
        """What ``build`` returns; its TypeError or ValueError as the file's, naming ``key``."""
        try:
            return build()
        except (TypeError, ValueError, OverflowError) as error:
            if str(error).startswith(name):
                raise
            raise archive.damaged(key, str(error)) from None

    springs, faces, pinned = read("springs"), read("faces"), read("pinned")
    values = {key: finite(key) for key in ("x_initial", "v_initial", "mass", "k", "c", "rest")}
    uv = finite("uv") if bool(read("has_uv")) else None
    try:
        system = System(values["x_initial"], springs, mass=values["mass"], k=values["k"], c=values["c"],
                        rest=values["rest"], pinned=pinned, velocities=values["v_initial"], faces=faces, uv=uv)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} is a damaged msprings model file: {error}") from None
    for option in _core.OPTIONS:
        value = checked(f"option_{option.name}", lambda: _option_value(archive, option))
        checked(f"option_{option.name}", lambda: setattr(system, option.name, value))
    kinds = read("collider_kind")
    fields = {key: finite(f"collider_{key}") for key in (*_COLLIDER_VECTORS, *_COLLIDER_SCALARS)}
    starts = finite("collider_start") if "collider_start" in layout else fields["center"]
    collider_values = []
    for index, kind in enumerate(kinds.tolist()):
        collider = (str(kind), *(np.array(fields[key][index], dtype=np.float64) for key in _COLLIDER_VECTORS),
                    *(float(fields[key][index]) for key in _COLLIDER_SCALARS))
        collider_id = checked(f"collider {index} (collider_kind, collider_start and the collider_* entries)",
                              lambda: system._add_collider(collider[0], np.array(starts[index], dtype=np.float64),
                                                           *collider[2:]))
        collider_values.append((index, collider_id, collider))
    for view, key in ((system.x, "x"), (system.v, "v"), (system.external, "external"), (system.f, "f")):
        view[...] = finite(key)
    if version >= 2:
        stored = [part for part in Ledger._fields if version >= 3 or part != "numerical"]
        parts = dict.fromkeys(Ledger._fields, 0.0)
        parts.update(zip(stored, (float(value) for value in finite("ledger"))))
        if any(parts[part] < 0.0 for part in Ledger._fields[:4]):
            raise archive.damaged("ledger", f"a dissipated part ({', '.join(Ledger._fields[:4])}) is negative")
        ledger = tuple(parts.values())
        watched = float(read("watched_energy"))  # NaN: no energy recorded
        if math.isinf(watched):
            raise archive.damaged("watched_energy", "it is infinite")
    else:
        dissipated = float(finite("dissipated"))
        fields_v1 = dict.fromkeys(Ledger._fields, 0.0)
        fields_v1["dampers" if dissipated >= 0.0 else "wind"] = abs(dissipated)
        ledger = tuple(fields_v1.values())
        watched = math.nan
    t = float(finite("t"))
    steps = int(read("steps"))
    if not 0 <= steps <= np.iinfo(np.int64).max:
        raise archive.damaged("steps", f"{steps} is not a step count (0 to 2**63 - 1)")
    checked("t, steps, ledger or watched_energy", lambda: system._restore_clock(t, steps, ledger, watched))
    for index, collider_id, collider in collider_values:  # where the colliders are now
        checked(f"collider {index} (collider_* entries)", lambda: system._set_collider(collider_id, *collider))
    return system
