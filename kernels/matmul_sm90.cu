// Matmul v6 (sm_90a wgmma + TMA): filled in by the Hopper work.
#include "matmul_common.cuh"
