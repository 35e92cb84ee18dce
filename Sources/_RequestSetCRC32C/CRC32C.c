// The CPU's CRC-32C instruction. Each function is compiled for its instruction set with a
// target attribute, so the rest of the package needs no special flags, and is called only
// after a run-time check that the CPU has it.
#include "_RequestSetCRC32C.h"
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

int _requestset_crc32c_hardware_available(void) {
  unsigned int eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
  return (ecx & bit_SSE4_2) ? 1 : 0;
}

__attribute__((target("sse4.2")))
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  const unsigned char *p = (const unsigned char *)bytes;
  uint64_t crc = state;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);  // unaligned-safe; compiles to one load
    crc = __builtin_ia32_crc32di(crc, word);
    p += 8;
    length -= 8;
  }
  uint32_t crc32 = (uint32_t)crc;
  while (length > 0) {
    crc32 = __builtin_ia32_crc32qi(crc32, *p);
    p += 1;
    length -= 1;
  }
  return crc32;
}

__attribute__((target("sse4.2")))
void _requestset_crc32c_update3(uint32_t states[3], const void *a, const void *b, const void *c, size_t length) {
  const unsigned char *pa = (const unsigned char *)a, *pb = (const unsigned char *)b, *pc = (const unsigned char *)c;
  uint64_t x = states[0], y = states[1], z = states[2];
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t wa, wb, wc;
    memcpy(&wa, pa + i, 8);
    memcpy(&wb, pb + i, 8);
    memcpy(&wc, pc + i, 8);
    x = __builtin_ia32_crc32di(x, wa);
    y = __builtin_ia32_crc32di(y, wb);
    z = __builtin_ia32_crc32di(z, wc);
  }
  uint32_t x32 = (uint32_t)x, y32 = (uint32_t)y, z32 = (uint32_t)z;
  for (; i < length; i++) {
    x32 = __builtin_ia32_crc32qi(x32, pa[i]);
    y32 = __builtin_ia32_crc32qi(y32, pb[i]);
    z32 = __builtin_ia32_crc32qi(z32, pc[i]);
  }
  states[0] = x32;
  states[1] = y32;
  states[2] = z32;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
int _requestset_crc32c_hardware_available(void) {
  return (getauxval(AT_HWCAP) & HWCAP_CRC32) ? 1 : 0;
}
#elif defined(__APPLE__)
// Every arm64 Apple CPU has the CRC extension.
int _requestset_crc32c_hardware_available(void) { return 1; }
#else
int _requestset_crc32c_hardware_available(void) { return 0; }
#endif

__attribute__((target("crc")))
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  const unsigned char *p = (const unsigned char *)bytes;
  uint32_t crc = state;
  while (length >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    crc = __builtin_arm_crc32cd(crc, word);
    p += 8;
    length -= 8;
  }
  while (length > 0) {
    crc = __builtin_arm_crc32cb(crc, *p);
    p += 1;
    length -= 1;
  }
  return crc;
}

__attribute__((target("crc")))
void _requestset_crc32c_update3(uint32_t states[3], const void *a, const void *b, const void *c, size_t length) {
  const unsigned char *pa = (const unsigned char *)a, *pb = (const unsigned char *)b, *pc = (const unsigned char *)c;
  uint32_t x = states[0], y = states[1], z = states[2];
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t wa, wb, wc;
    memcpy(&wa, pa + i, 8);
    memcpy(&wb, pb + i, 8);
    memcpy(&wc, pc + i, 8);
    x = __builtin_arm_crc32cd(x, wa);
    y = __builtin_arm_crc32cd(y, wb);
    z = __builtin_arm_crc32cd(z, wc);
  }
  for (; i < length; i++) {
    x = __builtin_arm_crc32cb(x, pa[i]);
    y = __builtin_arm_crc32cb(y, pb[i]);
    z = __builtin_arm_crc32cb(z, pc[i]);
  }
  states[0] = x;
  states[1] = y;
  states[2] = z;
}

#else
int _requestset_crc32c_hardware_available(void) { return 0; }
uint32_t _requestset_crc32c_update(uint32_t state, const void *bytes, size_t length) {
  (void)bytes;
  (void)length;
  return state;  // never called: the check above says no
}
void _requestset_crc32c_update3(uint32_t states[3], const void *a, const void *b, const void *c, size_t length) {
  (void)states;
  (void)a;
  (void)b;
  (void)c;
  (void)length;  // never called: the check above says no
}
#endif
