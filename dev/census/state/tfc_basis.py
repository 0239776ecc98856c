"""tfc 1.4.0's kernel state for `ccshim conform` (census.py port).

tfc's one legacy kernel, xlaWrapper (src/tfc/utils/BF.cc), finds the basis
object it computes with by the identifier in its first operand: an index
into BasisFunc::BasisFuncContainer, which each basis object's constructor
appends to.  So a process can run the kernel only after tfc's Python has
made the objects, as utfc and mtfc make them.  Imported in each side's own
process, with that side's build first on its path, this module makes the
same two objects in the same order (identifiers 0 and 1 on both sides) and
gives the kernel's capsule as that build's basis objects carry it: the
legacy kernel in the legacy build, the typed handler `ccshim port` wrote in
the ported one.
"""

import numpy as np
from tfc.utils import BF

# utfc's basis for a Chebyshev expansion of degree 4 on [-1, 1] with no
# constraints removed: BF.CP(x0, xf, nC, deg + 1), identifier 0.
CP = BF.CP(-1.0, 1.0, np.array([], dtype=np.int32), 5)
# mtfc's for two dimensions on [0, 1]^2, degree 3, no constraints (nC=[-1,
# -1], which mtfc turns into an empty row per dimension): BF.nCP(x0, xf, nC,
# deg + 1), identifier 1.
NCP = BF.nCP(np.zeros(2), np.ones(2), np.zeros((2, 0), dtype=np.int32), 4)


def capsule():
    """The kernel's capsule as the basis objects of this build carry it."""
    assert (CP.identifier, NCP.identifier) == (0, 1), "made after other basis objects"
    return CP.xlaCapsule
