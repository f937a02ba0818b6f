"""Many mass-spring systems of one topology stepped by one call: :class:`Ensemble`."""
from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._system import Energy, Ledger, System, _collider_vectors

__all__ = ["Ensemble"]


class Ensemble(_core.Ensemble):
    """Many systems of one topology, stepped together in C with the GIL released.

    Parameters
    ----------
    systems : sequence of System, length B >= 1
        The members.  They must share one topology: node count, ``springs`` array,
        ``pinned`` mask and ``faces``.  The ensemble copies them: their parameters, state,
        options (integrator, gravity, drag, ...), colliders, external force and energy
        ledger.  Later changes to the systems do not reach the ensemble.

    Attributes
    ----------
    x, v : ndarray, shape (B, n, 3)
        Positions (m) and velocities (m/s), writable views of the C memory.
    mass : ndarray, shape (B, n)
        Node masses (kg), writable view.
    k, c, rest : ndarray, shape (B, m)
        Stiffnesses (N/m), axial damping (N s/m) and rest lengths (m), writable views.
    gravity : ndarray, shape (B, 3)
        Gravitational acceleration of each member (m/s^2), writable view.
    t : ndarray, shape (B,)
        Simulated time of each member (s), read-only view.
    steps : ndarray of int64, shape (B,)
        Steps each member has taken, read-only view.
    diverged : ndarray of bool, shape (B,)
        Members whose step blew up.  :meth:`step` leaves them where they were before the
        call that blew up and does not step them again until you clear the flag:
        ``ens.diverged[i] = False`` (after changing what made it blow up).
    divergence_time : ndarray, shape (B,)
        For a diverged member, the time (s) that the step that blew up would have reached;
        NaN otherwise.  ``divergence_step`` (int64, -1 otherwise) is that step, counted as
        ``steps`` counts.
    springs : ndarray of int32, shape (m, 2); pinned : ndarray of bool, shape (n,)
        The shared topology, read-only views.
    threads : int
        Worker threads of :meth:`step`; 0 (default) means :func:`msprings.set_num_threads`'
        setting (all cores unless set).  Any number gives the same bits.
    batched : int
        Members the last :meth:`step` stepped eight at a time in vector lanes: small
        members (up to 256 nodes, numbered so that a spring's nodes are close) of explicit
        or symplectic Euler with nothing but springs, gravity and pins acting.  The others
        step one by one, each on one worker.  Both give the same bits.

    Raises
    ------
    TypeError
        ``systems`` is a single :class:`System` (use :meth:`replicate`) or an item of it is
        not a :class:`System`.
    ValueError
        ``systems`` is empty, or ``systems[i]`` differs from ``systems[0]`` in topology
        (the message names the first such member and how it differs).

    Notes
    -----
    Member ``i`` steps exactly as ``systems[i]`` would alone with the same calls: ``x``,
    ``v``, ``t``, :meth:`energy` and :meth:`ledger` are the same bits.  Values written
    through the views are checked at the next :meth:`step`.  Options other than gravity
    stay each member's own (:attr:`integrator` sets every member's); :meth:`add_plane`,
    :meth:`add_sphere`, :meth:`add_box` and :meth:`add_cylinder` add a collider to every
    member.  Setting a name the ensemble does not have (a System option such as ``drag``) is
    refused: set it on the systems before building the ensemble.  A step past a member's
    stability limit gives no :class:`~msprings.StabilityWarning` (the member's divergence is
    reported in :attr:`diverged`).  An ensemble pickles bit for bit (:meth:`__reduce_ex__`).

    Examples
    --------
    >>> import numpy as np, msprings
    >>> s = msprings.System([[0, 0, 0], [0, -1, 0]], [[0, 1]], k=20.0, c=0.5, pinned=[0])
    >>> ens = msprings.Ensemble.replicate(s, 4)
    >>> ens.k[:, 0] = [10.0, 20.0, 40.0, 80.0]   # one stiffness per member (N/m)
    >>> ens.step(1e-3, 1000)
    >>> ens.x.shape, round(float(ens.t[0]), 6)
    ((4, 2, 3), 1.0)
    """

    def __setattr__(self, name: str, value: Any) -> None:
        """Sets a setting the ensemble has (``integrator``, ``threads``, ...); the views are
        written into, never replaced; any other name is refused with an AttributeError, so that
        a typo or a System option the ensemble does not have is not silently kept."""
        if name in ("_families", "_uv"):
            object.__setattr__(self, name, value)
            return
        if not hasattr(type(self), name):
            public = [attribute for attribute in dir(type(self)) if not attribute.startswith("_")]
            close = difflib.get_close_matches(name, public, n=1, cutoff=0.7)
            hint = f"; did you mean {close[0]}?" if close else (
                ": an ensemble has its members' views and settings only; set other options on the systems "
                "before building it, or step each member as a System (ens.system(i))")
            raise AttributeError(f"'Ensemble' object has no attribute '{name}'{hint}")
        try:
            super().__setattr__(name, value)
        except AttributeError as error:
            if name in ("x", "v", "mass", "k", "c", "rest", "gravity", "diverged"):
                raise AttributeError(f"{error}: ens.{name} is a view of the members' memory, written into, not "
                                     f"replaced: ens.{name}[:] = ... (or ens.{name}[i] = ... for member i)") from None
            raise

    def __getitem__(self, index: Any) -> Any:
        raise TypeError("an Ensemble is not indexed: ens.system(i) gives member i as a System, and the views "
                        "(ens.x[i], ens.k[i], ...) its arrays")

    def __init__(self, systems: Sequence[System]) -> None:
        items = list(systems) if not isinstance(systems, System) else None
        if items is None:
            raise TypeError("systems must be a sequence of msprings.System (use Ensemble.replicate(system, count))")
        super().__init__(items)
        self._families = [dict(getattr(item, "families", {}) or {}) for item in items]
        self._uv = [getattr(item, "uv", None) for item in items]

    @classmethod
    def replicate(cls, system: System, count: int) -> "Ensemble":
        """``count`` copies of ``system``; set each member's parameters through the views.

        Parameters
        ----------
        system : System
            The system every member starts as.
        count : int
            Number of members (>= 1).

        Returns
        -------
        Ensemble
            The ensemble of ``count`` members.

        Raises
        ------
        TypeError
            ``count`` is not an integer, or ``system`` is not a :class:`System`.
        ValueError
            ``count < 1``.
        """
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
            raise TypeError(f"count must be an integer number of members, not {type(count).__name__}")
        if count < 1:
            raise ValueError(f"count = {count} must be >= 1")
        return cls([system] * int(count))

    def __len__(self) -> int:
        return self.n_members

    def step(self, dt: float, n: int = 1) -> None:
        """Advance every member that has not diverged by ``n`` steps of ``dt`` seconds, each
        with its own integrator, on :attr:`threads` workers, in C with the GIL released.

        A member whose step blows up (a position or velocity becomes non-finite) is put back
        where it was at the start of this call and flagged in :attr:`diverged` (with
        :attr:`divergence_time` and :attr:`divergence_step`); the others go on, unaffected.
        No exception is raised for it.

        Parameters
        ----------
        dt : float
            Time step (s), finite and > 0.
        n : int, default 1
            Number of steps (>= 1).

        Raises
        ------
        TypeError
            ``dt`` is not a real number or ``n`` not an integer.
        ValueError
            ``dt`` is not finite and > 0, ``n < 1`` (as for :meth:`System.step`), or a value
            written through a view is bad (the message names the member and the item); no
            member has changed.
        KeyboardInterrupt
            Ctrl-C during the call: every member is put back where it was before the call
            (and flags set by the call are cleared).
        """
        if not isinstance(n, bool) and isinstance(n, (int, np.integer)) and n < 1:
            raise ValueError(f"n = {n} is out of range: it must be >= 1 (as for System.step)")
        super().step(dt, n)

    @property
    def integrator(self) -> str | tuple[str, ...]:
        """The members' integrator: one name if they share it, else one name per member.
        Setting it sets every member's (a name of :data:`msprings.INTEGRATORS`)."""
        names = self._integrators()
        return names[0] if len(set(names)) == 1 else names

    @integrator.setter
    def integrator(self, name: str) -> None:
        self._set_option("integrator", name)

    def _add(self, kind: str, center: ArrayLike, axis: ArrayLike, size: ArrayLike, velocity: ArrayLike,
             restitution: float, friction: float, thickness: float,
             names: tuple[str, str] = ("center", "axis")) -> None:
        self._add_collider(kind, *_collider_vectors(center, axis, size, velocity, names),
                           restitution, friction, thickness)

    def add_plane(self, point: ArrayLike = (0.0, 0.0, 0.0), normal: ArrayLike = (0.0, 1.0, 0.0), *,
                  restitution: float = 0.0, friction: float = 0.0, thickness: float = 0.0,
                  velocity: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Add the plane of :meth:`System.add_plane` to every member.

        A member stepped alone (:meth:`system`) keeps it.

        Parameters
        ----------
        point : array_like, shape (3,), default (0, 0, 0)
            A point on the plane (m).
        normal : array_like, shape (3,), default (0, 1, 0)
            Normal pointing out of the solid side (normalised; non-zero).
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the collider (m/s).

        Raises
        ------
        TypeError
            If a value is not a real number (or array of them).
        ValueError
            If a vector does not have shape (3,), a value is not finite, ``restitution`` is
            outside [0, 1], or ``friction`` or ``thickness`` is negative, or ``normal`` is zero.
        """
        System.add_plane(self, point, normal, restitution=restitution, friction=friction,  # type: ignore[arg-type]
                         thickness=thickness, velocity=velocity)

    def add_sphere(self, center: ArrayLike, radius: float, *, restitution: float = 0.0, friction: float = 0.0,
                   thickness: float = 0.0, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Add the sphere of :meth:`System.add_sphere` to every member.

        Parameters
        ----------
        center : array_like, shape (3,)
            Centre (m).
        radius : float
            Radius (m), > 0.
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the collider (m/s).

        Raises
        ------
        TypeError
            If a value is not a real number (or array of them).
        ValueError
            If a vector does not have shape (3,), a value is not finite, ``restitution`` is
            outside [0, 1], or ``friction`` or ``thickness`` is negative, or ``radius`` is not > 0.
        """
        System.add_sphere(self, center, radius, restitution=restitution, friction=friction,  # type: ignore[arg-type]
                          thickness=thickness, velocity=velocity)

    def add_box(self, lower: ArrayLike, upper: ArrayLike, *, restitution: float = 0.0, friction: float = 0.0,
                thickness: float = 0.0, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Add the axis-aligned box of :meth:`System.add_box` to every member.

        Parameters
        ----------
        lower, upper : array_like, shape (3,)
            Lowest and highest corner (m).
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the collider (m/s).

        Raises
        ------
        TypeError
            If a value is not a real number (or array of them).
        ValueError
            If a vector does not have shape (3,), a value is not finite, ``restitution`` is
            outside [0, 1], or ``friction`` or ``thickness`` is negative, or ``lower`` is
            not below ``upper`` on every axis.
        """
        System.add_box(self, lower, upper, restitution=restitution, friction=friction,  # type: ignore[arg-type]
                       thickness=thickness, velocity=velocity)

    def add_cylinder(self, center: ArrayLike, radius: float, height: float, axis: ArrayLike = (0.0, 1.0, 0.0), *,
                     restitution: float = 0.0, friction: float = 0.0, thickness: float = 0.0,
                     velocity: ArrayLike = (0.0, 0.0, 0.0)) -> None:
        """Add the capped cylinder of :meth:`System.add_cylinder` to every member.

        Parameters
        ----------
        center : array_like, shape (3,)
            Centre (m).
        radius : float
            Radius (m), > 0.
        height : float
            Full height between the caps (m), > 0.
        axis : array_like, shape (3,), default (0, 1, 0)
            Direction of the axis (normalised; non-zero).
        restitution : float, default 0.0
            Coefficient of restitution of the contacts (dimensionless, in [0, 1]).
        friction : float, default 0.0
            Coulomb friction coefficient (dimensionless, >= 0).
        thickness : float, default 0.0
            Contact distance from the surface (m, >= 0).
        velocity : array_like, shape (3,), default (0, 0, 0)
            Velocity of the collider (m/s).

        Raises
        ------
        TypeError
            If a value is not a real number (or array of them).
        ValueError
            If a vector does not have shape (3,), a value is not finite, ``restitution`` is
            outside [0, 1], or ``friction`` or ``thickness`` is negative, ``radius`` or
            ``height`` is not > 0, or ``axis`` is zero.
        """
        System.add_cylinder(self, center, radius, height, axis,  # type: ignore[arg-type]
                            restitution=restitution, friction=friction, thickness=thickness, velocity=velocity)

    def energy(self) -> Energy:
        """Each member's energies, as :meth:`System.energy`.

        Returns
        -------
        msprings.Energy
            kinetic, spring, gravity, dissipated, work, mechanical and total energy (J), each a
            (B,) array.
        """
        (kinetic, spring, gravity, dissipated, work), _ = self._accounts()
        mechanical = kinetic + spring + gravity
        return Energy(kinetic, spring, gravity, dissipated, work, mechanical, mechanical + dissipated - work)

    def ledger(self) -> Ledger:
        """Each member's ledger by mechanism, as :meth:`System.ledger`.

        Returns
        -------
        msprings.Ledger
            The dissipated energy and work of each mechanism (J), each a (B,) array.
        """
        return Ledger(*self._accounts()[1])

    def system(self, index: int) -> System:
        """Member ``index`` (negative counts from the end) as a new, independent
        :class:`System`: the same parameters, options, colliders, state, ledger and time,
        stepping on alone with the bits it would have in the ensemble.

        Parameters
        ----------
        index : int
            Member index (negative counts from the end).

        Returns
        -------
        System
            A copy of the member.

        Raises
        ------
        TypeError
            ``index`` is not an integer.
        IndexError
            ``index`` is out of range.
        """
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"index must be an integer, not {type(index).__name__}")
        count = self.n_members
        position = int(index) + count if index < 0 else int(index)
        if not 0 <= position < count:
            raise IndexError(f"member {index} is out of range for an ensemble of {count} members")
        member = self._member(position, System)
        member.families = {name: indices.copy() for name, indices in self._families[position].items()}
        uv = self._uv[position]
        member.uv = None if uv is None else uv.copy()
        return member

    def __repr__(self) -> str:
        diverged = int(np.count_nonzero(self.diverged))
        integrator = self.integrator
        if not isinstance(integrator, str):
            integrator = "mixed integrators"
        return (f"<msprings.Ensemble: {self.n_members} members of {self.n_nodes} nodes and {self.n_springs} "
                f"springs, {integrator}, {diverged} diverged>")

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickling, every protocol: the members as their :meth:`system` copies (each
        pickled as a :class:`System` is, bit for bit: parameters, options, colliders, state,
        ledger with a change of yours still pending, time, step count, ``families``,
        ``uv``), with :attr:`diverged`, :attr:`divergence_time`, :attr:`divergence_step`,
        :attr:`batched`, :attr:`threads` and a subclass's own attributes.  The unpickled
        ensemble steps on with the bits the original would have.  The data carries the
        version :data:`ENSEMBLE_PICKLE_VERSION`.

        Raises
        ------
        RuntimeError
            Another thread is stepping the ensemble: pickle it once that step is over.
        """
        members = [self.system(i) for i in range(self.n_members)]
        divergence = (self.diverged.copy(), self.divergence_time.copy(), self.divergence_step.copy(), self.batched)
        extra = {name: value for name, value in getattr(self, "__dict__", {}).items()
                 if name not in ("_families", "_uv")}
        return _unpickle_ensemble, (type(self), ENSEMBLE_PICKLE_VERSION, members, divergence, self.threads, extra)


#: The version of the data that a pickled :class:`Ensemble` carries; unpickling refuses any other.
ENSEMBLE_PICKLE_VERSION = 1


def _unpickle_ensemble(cls: type, version: Any, members: Any, divergence: Any, threads: Any,
                       extra: Any) -> Ensemble:
    """An ensemble from the data of :meth:`Ensemble.__reduce_ex__` (ValueError if damaged)."""
    if version != ENSEMBLE_PICKLE_VERSION:
        raise ValueError(f"cannot unpickle an Ensemble of data version {version!r}: this msprings reads version "
                         f"{ENSEMBLE_PICKLE_VERSION}")
    if not (isinstance(cls, type) and issubclass(cls, Ensemble)):
        raise ValueError("damaged Ensemble data: the class is not an Ensemble")
    if not isinstance(members, list) or not members or not all(isinstance(m, System) for m in members):
        raise ValueError("damaged Ensemble data: the members must be a non-empty list of Systems")
    if not isinstance(divergence, tuple) or len(divergence) != 4 or not isinstance(extra, dict):
        raise ValueError("damaged Ensemble data: the divergence or the attributes are malformed")
    ensemble = cls(members)
    flags, times, steps, batched = divergence
    try:
        flags = np.ascontiguousarray(flags, dtype=np.bool_).reshape(-1)
        times = np.ascontiguousarray(times, dtype=np.float64).reshape(-1)
        steps = np.ascontiguousarray(steps, dtype=np.int64).reshape(-1)
        batched = int(batched)
    except (TypeError, ValueError) as error:
        raise ValueError(f"damaged Ensemble data: {error}") from None
    ensemble._set_divergence(flags.view(np.uint8).tobytes(), times.tobytes(), steps.tobytes(), batched)
    ensemble.threads = threads
    for name, value in extra.items():
        setattr(ensemble, name, value)
    return ensemble
