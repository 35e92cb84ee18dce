// The CPU's CRC-32C instruction for RequestSet's log checksums: SSE 4.2's `crc32` on x86-64,
// the ARMv8 CRC extension's `crc32c` on arm64. Internal to RequestSet; not API.
#ifndef REQUESTSET_CRC32C_H
#define REQUESTSET_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has a CRC-32C instruction that `_requestset_crc32c_update` uses, else 0.
int _requestset_crc32c_hardware_available(void);

/// Folds `length` bytes at `bytes` into the running (unfinished, not inverted) CRC-32C
/// `state` with the CPU's instruction. Call only when `_requestset_crc32c_hardware_available()`
/// returned 1.
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length);

/// Folds `length` bytes at each of `a`, `b` and `c` into the three running CRC-32C states in
/// `states`, interleaving the three so the CPU's CRC unit runs them in parallel (about three
/// times one lane's speed). Call only when `_requestset_crc32c_hardware_available()` returned 1.
void _requestset_crc32c_update3(uint32_t states[3], const void *a, const void *b, const void *c, size_t length);

#endif
