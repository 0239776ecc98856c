"""jax.export artifacts older than the running JAX's compatibility window.

JAX 0.11.2 and later refuse serialization versions from before 2025 (JAX
0.4.23 wrote version 1 in December 2023); their module, a StableHLO portable
artifact, still reads, since StableHLO keeps its bytecode readable for years.
Of what such an artifact records, one fact is written in a way today's JAX
no longer reads: its input and output shardings, as HloSharding protos where
JAX now writes named shardings.  JAX's own reader, with its
jax_export_deserialize_expired_versions flag, reads all the rest; this
module gives it the shardings, upgraded where the upgrade is exact (no
sharding, or replicated over one device: the same as no sharding) and
refused, naming the sharding, where it is not.  The Exported it reads is
written back at the running JAX's serialization version.

What it touches in JAX, for the duration of one read only:
jax._src.export.serialization._deserialize_sharding, and the flag.
"""
from __future__ import annotations

import contextlib
import threading

from .. import _jax_internals
from ._common import ArtifactError

_lock = threading.Lock()


def _sharding_reader(original, nr_devices: int, what: str):
    xc = _jax_internals.xla_client()

    def read_sharding(exp, s, *, uniques):
        if s.NamedSharding() is not None or s.HloShardingProtoIsNone():
            return original(exp, s, uniques=uniques)
        proto = xc.OpSharding()
        proto.ParseFromString(bytes(s.HloShardingProtoAsNumpy()))
        sharding = xc.HloSharding.from_proto(proto)
        if sharding.is_replicated() and nr_devices == 1:
            return None  # replicated over one device: what no sharding says
        raise ArtifactError(
            f"{what}: an artifact of serialization version {exp.SerializationVersion()} with "
            f"the sharding {sharding} over {nr_devices} device(s); today's JAX writes only "
            "named shardings, and this one cannot be written as one exactly, so it is not "
            "upgraded (JAX 0.8 to 0.10 still read it)")
    return read_sharding


@contextlib.contextmanager
def _reading_expired(nr_devices: int, what: str):
    config = _jax_internals.config()
    serialization = _jax_internals.serialization()
    with _lock:
        original = serialization._deserialize_sharding
        serialization._deserialize_sharding = _sharding_reader(original, nr_devices, what)
        try:
            with config.export_deserialize_expired_versions(True):
                yield
        finally:
            serialization._deserialize_sharding = original


def deserialize(data: bytes, what: str):
    """The jax.export.Exported of an artifact past the running JAX's window,
    or ArtifactError saying what cannot be upgraded."""
    import warnings

    from jax import export as jax_export
    serialization = _jax_internals.serialization()
    root = serialization.ser_flatbuf.Exported.GetRootAsExported(data, 0)
    nr_devices = root.NrDevices() or root.NrDevicesShort()
    with _reading_expired(nr_devices, what), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the expired-version notice
        return jax_export.deserialize(data)
