"""Machine profiles: the parameters of the communication models, stored as TOML.

A profile gives, for each locality (``intra_socket``, ``intra_node``, ``inter_node``) and
each protocol (``short``, ``eager``, ``rend``), a start-up cost ``alpha`` (s) and a rate
``rate`` (bytes/s); inter-node protocols may add an ``injection`` rate R_N (bytes/s, the
node's network injection limit of the max-rate model). Top-level keys: ``short_max`` and
``eager_max`` (largest message in bytes sent with each protocol), ``gamma`` (s per queue
search step), ``delta`` (s per byte of link contention), ``ppn`` (ranks per node the
profile describes, for the socket split), optional ``sockets_per_node``.

For the simulator (:mod:`commsolve.sim`) a profile may also give ``overhead`` (LogGP's o:
CPU seconds at each end of a message), ``any_source`` (seconds a message takes more when an
any-source engine receives it, as the solves do; default 0), ``engine_overhead`` (CPU seconds
per message end in commsolve's message engine beyond o; default 0) and a ``[compute]`` table: ``flop_rate`` (flop/s per
rank for the small dense block products of a solve), ``bandwidth`` (bytes/s per rank of
memory traffic), ``call_overhead`` (seconds per kernel call) and ``copy_rate`` (bytes/s
per rank of packing and copying message data, which sits in cache), and optionally the
last-level cache: ``cache_bytes`` (per node, shared by its ranks) and ``cache_bandwidth``
(bytes/s per rank reading from it; a rank whose factor fits its share streams it at this
rate instead of ``bandwidth``).

A machine whose network is a torus (k-ary n-cube, e.g. Blue Gene) may give a ``[torus]``
table: ``link_rate`` (bytes/s one way on one link), ``hop_latency`` (seconds a message takes
per router hop, Solomonik's L) and ``dims`` (the node torus's extents the profile describes,
e.g. [8, 8, 8]; a run may give others). The simulator then routes inter-node messages along
dimension-ordered paths and lets messages sharing a link wait for it, and the multicast
models (:mod:`commsolve.model.formulas`) read B_n, o and L from it.

Bundled: ``bluewaters`` (thesis Table 3.1, eqs. 3.2 and 3.4); ``cori-haswell`` and
``perlmutter-cpu`` (the SC'23 paper's machines, with the simulator's fields; each figure's
public source, or that it is an estimate, in a comment and in ``profiles/SOURCES.md``); ``edison``
(the PSelInv paper's Cray XC30, in the same style). ``commsolve calibrate``
writes profiles of the machine it runs on.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field

__all__ = ["MachineProfile", "ProfileError", "LEVELS", "PROTOCOLS", "COMPUTE_FIELDS", "CACHE_FIELDS", "TORUS_FIELDS",
           "load_profile", "bundled_profiles"]

LEVELS = ("intra_socket", "intra_node", "inter_node")
COMPUTE_FIELDS = ("flop_rate", "bandwidth", "call_overhead", "copy_rate")
CACHE_FIELDS = ("cache_bytes", "cache_bandwidth")  # optional in [compute]: both or neither
OPTIONAL_COMPUTE = ("triangular_rate",)  # optional in [compute]: flop/s of small triangular solves
TORUS_FIELDS = ("link_rate", "hop_latency", "dims")
TOP_FIELDS = ("name", "description", "short_max", "eager_max", "gamma", "delta", "ppn", "sockets_per_node", "overhead",
              "any_source", "engine_overhead")
PROTOCOLS = ("short", "eager", "rend")
_BUNDLED = os.path.join(os.path.dirname(__file__), "profiles")


class ProfileError(ValueError):
    """A profile file is missing a field or holds a bad value (the message names both)."""


@dataclass
class MachineProfile:
    """The parameters of the communication models (and, where given, of the simulator's
    models) for one machine, as a profile's TOML stores them (this module's description).

    Parameters
    ----------
    name : str
        The profile's name.
    alpha : dict
        ``(level, protocol) -> seconds``: the start-up cost.
    rate : dict
        ``(level, protocol) -> bytes/s``.
    injection : dict
        ``protocol -> bytes/s`` (inter-node): the node's injection limit R_N, inf if absent.
    short_max : int
        The largest message in bytes sent with the short protocol.
    eager_max : int
        The largest message in bytes sent with the eager protocol.
    gamma : float
        Seconds per queue search step.
    delta : float
        Seconds per byte of link contention.
    ppn : int
        Ranks per node the profile describes, for the socket split.
    sockets_per_node : int
        Sockets per node.
    description : str
        Free text.
    overhead : float, optional
        LogGP's o: seconds per message end (CPU), for the simulator.
    any_source : float
        Seconds added per message an any-source engine receives.
    engine_overhead : float
        CPU seconds per message end in commsolve's engine, beyond o.
    compute : dict, optional
        ``flop_rate``, ``bandwidth``, ``call_overhead``, ``copy_rate`` and optionally
        ``cache_bytes`` and ``cache_bandwidth`` (both or neither) and ``triangular_rate``.
    torus : dict, optional
        ``link_rate``, ``hop_latency`` and ``dims``.
    """

    name: str
    alpha: dict  # (level, protocol) -> seconds
    rate: dict  # (level, protocol) -> bytes/s
    injection: dict = field(default_factory=dict)  # protocol -> bytes/s (inter-node), inf if absent
    short_max: int = 512
    eager_max: int = 8192
    gamma: float = 0.0
    delta: float = 0.0
    ppn: int = 1
    sockets_per_node: int = 1
    description: str = ""
    overhead: float | None = None  # LogGP o, seconds per message end
    any_source: float = 0.0  # seconds added per message an any-source engine receives
    engine_overhead: float = 0.0  # CPU seconds per message end in commsolve's engine, beyond o
    compute: dict | None = None  # flop_rate, bandwidth, call_overhead, copy_rate[, cache_bytes, cache_bandwidth]
    torus: dict | None = None  # link_rate, hop_latency, dims

    def protocol(self, nbytes):
        """Protocol index (0 short, 1 eager, 2 rend) of messages of ``nbytes``.

        Parameters
        ----------
        nbytes : int or array_like
            Message sizes (bytes).

        Returns
        -------
        ndarray of int
            The protocol index of each size (0-d for a scalar).

        Examples
        --------
        >>> from commsolve.model import load_profile
        >>> load_profile("bluewaters").protocol([100, 5000, 100000])
        array([0, 1, 2])
        """
        import numpy as np

        nbytes = np.asarray(nbytes)
        return np.where(nbytes <= self.short_max, 0, np.where(nbytes <= self.eager_max, 1, 2))

    def has_level(self, level):
        """Whether the profile gives every protocol's alpha for ``level``.

        Parameters
        ----------
        level : str
            One of :data:`LEVELS`.

        Returns
        -------
        bool
        """
        return all((level, p) in self.alpha for p in PROTOCOLS)

    # ---- TOML ---------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d, source="<profile>"):
        """The profile a parsed TOML document describes, every field checked.

        Parameters
        ----------
        d : dict
            The document (``tomllib.load``'s).
        source : str
            Where it came from, for the error messages; without a ``name`` field the
            profile is named after it (its file name without the extension).

        Returns
        -------
        MachineProfile

        Raises
        ------
        ProfileError
            For a missing field or table, an unknown (misspelled) field (naming the closest
            known one), or a bad value: not a number, not finite, negative, or not positive
            where it must be (the rates, say), ``short_max`` above ``eager_max``, one of the
            cache's two fields without the other, torus ``dims`` that are not a list of
            positive integers.
        """
        def need(table, key, where):
            if key not in table:
                raise ProfileError(f"{source}: missing field '{where}{key}'")
            v = table[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ProfileError(f"{source}: field '{where}{key}' must be a number, got {v!r}")
            if not math.isfinite(v):
                raise ProfileError(f"{source}: field '{where}{key}' must be a number, and finite: got {v!r}")
            return float(v)

        def known(table, keys, where):
            """A misspelled key is an error, not a default silently taken."""
            import difflib

            for key in table:
                if key not in keys:
                    near = difflib.get_close_matches(key, keys, n=1)
                    raise ProfileError(f"{source}: unknown field '{where}{key}'"
                                       + (f" (did you mean '{where}{near[0]}'?)" if near else "")
                                       + f"; known: {', '.join(keys)}")

        known(d, TOP_FIELDS + LEVELS + ("compute", "torus"), "")

        def positive(v, name):
            if v <= 0:
                raise ProfileError(f"{source}: field '{name}' must be positive, got {v}")
            return v

        if not isinstance(d.get("name", ""), str):
            raise ProfileError(f"{source}: field 'name' must be a string")
        alpha, rate, injection = {}, {}, {}
        for level in LEVELS:
            if level not in d:
                if level == "intra_socket":
                    continue  # optional: without it, on-node messages use intra_node
                raise ProfileError(f"{source}: missing table '[{level}]'")
            if not isinstance(d[level], dict):
                raise ProfileError(f"{source}: '{level}' must be a table ([{level}] with short, eager and rend), "
                                   f"got {d[level]!r}")
            known(d[level], PROTOCOLS, f"{level}.")
            for proto in PROTOCOLS:
                t = d[level].get(proto)
                if not isinstance(t, dict):
                    raise ProfileError(f"{source}: missing field '{level}.{proto}' (a table with alpha and rate)")
                known(t, ("alpha", "rate", "injection") if level == "inter_node" else ("alpha", "rate"),
                      f"{level}.{proto}.")
                a = need(t, "alpha", f"{level}.{proto}.")
                if a < 0:
                    raise ProfileError(f"{source}: field '{level}.{proto}.alpha' must be >= 0, got {a}")
                alpha[level, proto] = a
                rate[level, proto] = positive(need(t, "rate", f"{level}.{proto}."), f"{level}.{proto}.rate")
                if level == "inter_node" and "injection" in t:
                    injection[proto] = positive(need(t, "injection", f"{level}.{proto}."), f"{level}.{proto}.injection")
        short_max = int(need(d, "short_max", ""))
        eager_max = int(need(d, "eager_max", ""))
        if not 0 <= short_max <= eager_max:
            raise ProfileError(f"{source}: need 0 <= short_max <= eager_max, got {short_max} and {eager_max}")
        gamma, delta = need(d, "gamma", ""), need(d, "delta", "")
        if gamma < 0 or delta < 0:
            raise ProfileError(f"{source}: gamma and delta must be >= 0")
        overhead = need(d, "overhead", "") if "overhead" in d else None
        any_source = need(d, "any_source", "") if "any_source" in d else 0.0
        engine = need(d, "engine_overhead", "") if "engine_overhead" in d else 0.0
        for key, v in (("overhead", overhead), ("any_source", any_source), ("engine_overhead", engine)):
            if v is not None and not 0 <= v < math.inf:
                raise ProfileError(f"{source}: field '{key}' must be >= 0 and finite, got {v}")
        compute = None
        if "compute" in d:
            if not isinstance(d["compute"], dict):
                raise ProfileError(f"{source}: 'compute' must be a table ([compute] with {', '.join(COMPUTE_FIELDS)})")
            known(d["compute"], COMPUTE_FIELDS + CACHE_FIELDS + OPTIONAL_COMPUTE, "compute.")
            compute = {k: need(d["compute"], k, "compute.") for k in COMPUTE_FIELDS}
            for k in ("flop_rate", "bandwidth", "copy_rate"):
                positive(compute[k], f"compute.{k}")
            if not 0 <= compute["call_overhead"] < math.inf:
                raise ProfileError(f"{source}: field 'compute.call_overhead' must be >= 0 and finite")
            given = [k for k in CACHE_FIELDS if k in d["compute"]]
            if given and len(given) != len(CACHE_FIELDS):
                raise ProfileError(f"{source}: [compute] gives {given[0]} without "
                                   f"{[k for k in CACHE_FIELDS if k not in given][0]} (the cache needs both)")
            for k in given + [k for k in OPTIONAL_COMPUTE if k in d["compute"]]:
                compute[k] = positive(need(d["compute"], k, "compute."), f"compute.{k}")
        torus = None
        if "torus" in d:
            t = d["torus"]
            if not isinstance(t, dict):
                raise ProfileError(f"{source}: 'torus' must be a table ([torus] with {', '.join(TORUS_FIELDS)})")
            known(t, TORUS_FIELDS, "torus.")
            dims = t.get("dims")
            if (not isinstance(dims, list) or not dims
                    or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in dims)):
                raise ProfileError(f"{source}: field 'torus.dims' must be a list of positive integers, got {dims!r}")
            torus = {"link_rate": positive(need(t, "link_rate", "torus."), "torus.link_rate"),
                     "hop_latency": need(t, "hop_latency", "torus."), "dims": list(dims)}
            if torus["hop_latency"] < 0:
                raise ProfileError(f"{source}: field 'torus.hop_latency' must be >= 0, got {torus['hop_latency']}")
        return cls(name=d.get("name", os.path.splitext(os.path.basename(source))[0]), alpha=alpha, rate=rate,
                   injection=injection, short_max=short_max, eager_max=eager_max, gamma=gamma, delta=delta,
                   ppn=int(need(d, "ppn", "")) if "ppn" in d else 1,
                   sockets_per_node=int(need(d, "sockets_per_node", "")) if "sockets_per_node" in d else 1,
                   description=str(d.get("description", "")), overhead=overhead, any_source=any_source,
                   engine_overhead=engine, compute=compute, torus=torus)

    def to_toml(self):
        """The profile as TOML text, which :meth:`from_dict` reads back.

        Returns
        -------
        str
            The top-level fields (``overhead`` when given, ``any_source`` and
            ``engine_overhead`` when not 0), one table per level the profile has, and
            ``[compute]`` and ``[torus]`` when given.
        """
        lines = [f'name = "{self.name}"', f'description = "{self.description}"', f"short_max = {self.short_max}",
                 f"eager_max = {self.eager_max}", f"gamma = {self.gamma!r}", f"delta = {self.delta!r}",
                 f"ppn = {self.ppn}", f"sockets_per_node = {self.sockets_per_node}"]
        if self.overhead is not None:
            lines.append(f"overhead = {self.overhead!r}")
        if self.any_source:
            lines.append(f"any_source = {self.any_source!r}")
        if self.engine_overhead:
            lines.append(f"engine_overhead = {self.engine_overhead!r}")
        for level in LEVELS:
            if not self.has_level(level):
                continue
            lines += ["", f"[{level}]"]
            for p in PROTOCOLS:
                extra = ""
                if level == "inter_node" and p in self.injection and math.isfinite(self.injection[p]):
                    extra = f", injection = {self.injection[p]!r}"
                lines.append(f"{p} = {{ alpha = {self.alpha[level, p]!r}, rate = {self.rate[level, p]!r}{extra} }}")
        if self.compute is not None:
            lines += ["", "[compute]"] + [f"{k} = {float(self.compute[k])!r}"
                                          for k in COMPUTE_FIELDS + CACHE_FIELDS + OPTIONAL_COMPUTE if k in self.compute]
        if self.torus is not None:
            lines += ["", "[torus]", f"link_rate = {float(self.torus['link_rate'])!r}",
                      f"hop_latency = {float(self.torus['hop_latency'])!r}", f"dims = {list(self.torus['dims'])!r}"]
        return "\n".join(lines) + "\n"

    def save(self, path):
        """Writes :meth:`to_toml`'s text to ``path``.

        Parameters
        ----------
        path : str or path
            The file (overwritten).
        """
        with open(path, "w") as f:
            f.write(self.to_toml())


def bundled_profiles():
    """The names of the bundled profiles.

    Returns
    -------
    list of str
        Sorted; each loads with :func:`load_profile`.
    """
    return sorted(os.path.splitext(f)[0] for f in os.listdir(_BUNDLED) if f.endswith(".toml"))


def load_profile(name_or_path):
    """A bundled profile by name (``"bluewaters"``) or a TOML file by path.

    Parameters
    ----------
    name_or_path : str, path or MachineProfile
        A path to a TOML file, else a bundled profile's name (:func:`bundled_profiles`); a
        MachineProfile is returned as it is.

    Returns
    -------
    MachineProfile

    Raises
    ------
    ProfileError
        When there is no such file nor bundled profile (the message lists the bundled
        ones), the file is not valid TOML or not UTF-8 text, or a field is missing or bad
        (:meth:`MachineProfile.from_dict`).
    """
    if isinstance(name_or_path, MachineProfile):
        return name_or_path
    path = os.fspath(name_or_path)
    if not os.path.exists(path):
        bundled = os.path.join(_BUNDLED, f"{path}.toml")
        if not os.path.exists(bundled):
            raise ProfileError(f"no profile file '{path}' and no bundled profile of that name "
                               f"(bundled: {', '.join(bundled_profiles())})")
        path = bundled
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text (byte {e.start}); a profile is a TOML file") from None
    return MachineProfile.from_dict(data, source=path)
