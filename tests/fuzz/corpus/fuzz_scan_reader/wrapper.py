from jax.interpreters import mlir
from jax.lib import xla_client
import ext

xla_client.register_custom_call_target("k_v1", ext.k_v1(), platform="cpu")


def register(name, capsule):
    xla_client.register_custom_call_target(name, capsule, platform="cpu")


def lower(ctx, x):
    return mlir.custom_call("k_v1", result_types=[x.type], operands=[x]).results
