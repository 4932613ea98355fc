/* A shared library that claims another model ABI version. */
#include <stdint.h>
uint32_t lap_model_abi_version(void) { return 999u; }
